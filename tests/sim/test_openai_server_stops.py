"""`serve-openai` and the ``stop`` list (issue 30, item 1): a request with more than 4 stop
strings or one longer than 256 characters is refused with 400 naming ``stop``; the cut is
found in one incremental pass over the tokens (decode calls linear in the tokens, not in tokens
times stop strings) and equals what decoding every prefix gives, on the real test tokenizer
(byte-level BPE, so multi-byte characters span several tokens)."""

from __future__ import annotations

import http.client
import json
import random
from pathlib import Path

import pytest
from agentworld.sim.backends.hf import HFBackend
from agentworld.sim.detokenize import IncrementalDecoder, find_stop
from agentworld.sim.server import HFChatModel, serve_in_thread
from agentworld.sim.server.chat import cut_at_stop
from transformers import AutoTokenizer

SYSTEM = {"role": "system", "content": "You simulate a Linux terminal.\n\nInitial observation:\n$ "}
TEXTS = [
    "ls -la /tmp && cat notes.md | grep hello",
    "héllo wörld — naïve café ✓ 日本語 🙂 done",
    "<predicted_observation>\nfile.txt notes.md src\n</predicted_observation>",
]


def post(port: int, body: dict) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        headers = {"Content-Type": "application/json"}
        connection.request("POST", "/v1/chat/completions", json.dumps(body).encode(), headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.fixture(scope="module")
def tokenizer(qwen3_dir: Path):
    return AutoTokenizer.from_pretrained(qwen3_dir)


@pytest.fixture(scope="module")
def server(qwen3_dir: Path):
    world_model = HFBackend().load(str(qwen3_dir), max_new_tokens=48)
    with serve_in_thread(HFChatModel(world_model), "tiny", max_wait_s=0.01) as running:
        yield running


def brute_force(ids: list[int], stops: list[str], decode) -> int | None:
    """The shortest prefix whose decoding holds a stop string (the definition)."""
    return next(
        (k for k in range(1, len(ids) + 1) if any(s in decode(ids[:k]) for s in stops)), None
    )


def test_incremental_text_equals_the_full_decoding(tokenizer) -> None:
    def decode(ids: list[int]) -> str:
        return tokenizer.decode(ids, skip_special_tokens=True)

    rng = random.Random(0)
    sequences = [tokenizer.encode(t) for t in TEXTS]
    sequences += [[rng.randrange(len(tokenizer)) for _ in range(60)] for _ in range(5)]
    for ids in sequences:
        decoder = IncrementalDecoder(decode)
        for token in ids:
            decoder.push(token)
            assert decode(decoder.ids).startswith(decoder.text)
        decoder.flush()
        assert decoder.text == decode(ids)


def test_the_cut_equals_decoding_every_prefix_with_decodes_linear_in_tokens(tokenizer) -> None:
    calls = 0

    def decode(ids: list[int]) -> str:
        nonlocal calls
        calls += 1
        return tokenizer.decode(ids, skip_special_tokens=True)

    for text in TEXTS:
        ids = tokenizer.encode(text)
        full = tokenizer.decode(ids)
        for stop in ("café", "🙂", "notes", "</predicted", text[-3:], "x" * 200):
            for stops in ([stop], ["never", stop, "日本"]):
                expected_end = brute_force(ids, stops, decode)
                calls = 0
                cut = cut_at_stop(full, ids, stops, decode)
                if expected_end is None:
                    assert cut is None
                    continue
                head = tokenizer.decode(ids[:expected_end])
                first = min(i for i in (head.find(s) for s in stops) if i >= 0)
                assert cut == (full[:first], expected_end)
                assert calls <= 2 * len(ids) + 2  # before: one decode per (token, stop) pair
    # many stop strings cost no more decodes (the protocol refuses them anyway)
    ids = tokenizer.encode(TEXTS[0] * 8)
    calls = 0
    assert find_stop(ids, [f"~{i}~" for i in range(2000)] + ["hello"], decode) == len(
        tokenizer.encode(TEXTS[0])
    )
    assert calls <= 2 * len(ids)


def test_stop_list_is_bounded_and_a_late_stop_is_cut_right(server) -> None:
    base = {"model": "tiny", "messages": [SYSTEM], "temperature": 0, "max_tokens": 40}
    status, greedy = post(server.port, base)
    assert status == 200
    text = greedy["choices"][0]["message"]["content"]
    stop = text[-5:-1]
    status, answer = post(server.port, {**base, "stop": ["~1~", "~2~", "~3~", stop]})
    assert status == 200
    choice = answer["choices"][0]
    assert choice["message"]["content"] == text[: text.find(stop)]
    assert choice["finish_reason"] == "stop"
    assert 0 < answer["usage"]["completion_tokens"] <= greedy["usage"]["completion_tokens"]

    status, refused = post(server.port, {**base, "stop": [f"~{i}~" for i in range(20000)]})
    assert status == 400
    assert refused["error"]["param"] == "stop"
    assert "at most 4 strings, got 20000" in refused["error"]["message"]
    status, refused = post(server.port, {**base, "stop": "y" * 257})
    assert status == 400 and refused["error"]["param"] == "stop"
    assert "at most 256 characters, got one of 257" in refused["error"]["message"]
    status, _ = post(server.port, {**base, "stop": ["z" * 256] * 4})  # the limits themselves
    assert status == 200
