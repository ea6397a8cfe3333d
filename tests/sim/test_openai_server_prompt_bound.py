"""`serve-openai` and huge prompts (issue 43, item 7), on a real uvicorn server over a real tiny
checkpoint (context 512 tokens): a ~1 MB prompt (under the body bound) is refused with 413
before it is tokenised, so a burst of them neither costs seconds each nor delays a small
request from another client; prompts that pass the bound are tokenised in worker threads,
so even large ones that the tokenizer must read do not hold up a small request; the
large-prompt lane refuses with 503 once ``max_waiting`` prompts are admitted."""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from agentworld.sim.backends.hf import HFBackend
from agentworld.sim.server import HFChatModel, serve_in_thread
from agentworld.sim.server.admission import PromptBound, TokenizerBusy, TokenizerPool

SYSTEM = {"role": "system", "content": "You simulate a Linux terminal.\n\nInitial observation:\n$ "}
BIG = ("ls -la /tmp && cat notes.md | grep hello " * 30000)[:1_000_000]  # 1 MB: body < 1 MiB


def post(port: int, body: dict) -> tuple[int, dict, float]:
    """``(status, JSON body, seconds)`` of one chat completion request."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    started = time.monotonic()
    try:
        headers = {"Content-Type": "application/json"}
        connection.request("POST", "/v1/chat/completions", json.dumps(body).encode(), headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read()), time.monotonic() - started
    finally:
        connection.close()


def request(content: str) -> dict:
    return {
        "model": "tiny",
        "messages": [SYSTEM, {"role": "user", "content": content}],
        "max_tokens": 2,
        "temperature": 0,
    }


def burst_with_a_small_request(port: int, big: int) -> tuple[list, tuple]:
    """``big`` huge prompts sent at once, then (0.2 s later) one small request."""
    with ThreadPoolExecutor(big + 1) as pool:
        bigs = [pool.submit(post, port, request(BIG)) for _ in range(big)]
        time.sleep(0.2)
        small = pool.submit(post, port, request("ls"))
        return [f.result() for f in bigs], small.result()


@pytest.fixture(scope="module")
def world_model(qwen3_dir: Path):
    return HFBackend().load(str(qwen3_dir), max_new_tokens=4)


def test_a_huge_prompt_gets_413_before_tokenising_and_a_small_request_is_not_delayed(
    world_model,
) -> None:
    with serve_in_thread(HFChatModel(world_model), "tiny", max_wait_s=0.01) as server:
        status, _, baseline_s = post(server.port, request("ls"))
        assert status == 200
        bigs, (small_status, small, small_s) = burst_with_a_small_request(server.port, 6)
    for status, body, seconds in bigs:
        assert status == 413, body
        message = body["error"]["message"]
        assert body["error"]["code"] == "request_too_large"
        assert body["error"]["param"] == "messages"
        # names the size, the bound and how it was derived (512 tokens x 16 bytes)
        assert "1000" in message and "8192 bytes" in message and "512 tokens" in message
        assert "--max-prompt-bytes" in message
        assert seconds < 2.0  # tokenising 1 MB costs ~2.5 s on this machine
    assert small_status == 200 and small["choices"][0]["message"]["content"] is not None
    assert small_s < baseline_s + 2.0, (small_s, baseline_s)


def test_large_prompts_that_pass_the_bound_are_tokenised_off_the_event_loop(world_model) -> None:
    """With the bound raised, 1 MB prompts are read by the tokenizer (then refused, 400, for
    the context): in threads, so the small request and /health are served meanwhile."""
    options = {"max_wait_s": 0.01, "max_prompt_bytes": 4 << 20, "tokenize_workers": 1}
    with serve_in_thread(HFChatModel(world_model), "tiny", **options) as server:
        status, _, baseline_s = post(server.port, request("ls"))
        assert status == 200
        started = time.monotonic()
        bigs, (small_status, _, small_s) = burst_with_a_small_request(server.port, 3)
        burst_s = time.monotonic() - started
    for status, body, _ in bigs:
        assert status == 400 and "maximum context length is 512" in body["error"]["message"]
    assert small_status == 200
    # the three big prompts tokenise one after another (one large-lane worker) for seconds;
    # the small request is answered well before they finish
    assert small_s < baseline_s + 2.0 and small_s < burst_s / 2, (small_s, baseline_s, burst_s)


def test_the_large_lane_is_bounded_and_the_small_lane_stays_free() -> None:
    pool = TokenizerPool(workers=1, max_waiting=2, small_bytes=100)
    release = threading.Event()

    def slow() -> str:
        release.wait(10)
        return "large"

    async def main() -> tuple:
        first = asyncio.ensure_future(pool.run(slow, 1000))
        second = asyncio.ensure_future(pool.run(slow, 1000))  # queued behind the first
        await asyncio.sleep(0.05)
        with pytest.raises(TokenizerBusy, match="at most 2"):
            await pool.run(slow, 1000)
        small = await asyncio.wait_for(pool.run(lambda: "small", 10), 2.0)
        release.set()
        return small, await first, await second, await pool.run(lambda: "again", 1000)

    try:
        assert asyncio.run(main()) == ("small", "large", "large", "again")
    finally:
        pool.close()


def test_the_prompt_bound() -> None:
    bound = PromptBound.derive(512, fallback_bytes=1 << 20)
    assert bound.max_bytes == 8192 and "512 tokens at 16 bytes per token" in bound.reason
    assert PromptBound.derive(512, bytes_per_token=4, fallback_bytes=1).max_bytes == 2048
    assert PromptBound.derive(512, max_prompt_bytes=10, fallback_bytes=1).max_bytes == 10
    assert PromptBound.derive(None, fallback_bytes=99).max_bytes == 99
    messages = [{"role": "user", "content": "é" * 4000}]  # 8000 bytes + 4 for the role
    assert bound.check(messages) == 8004
    messages[0]["content"] += "é" * 100
    with pytest.raises(ValueError, match="8204 bytes; this server accepts at most 8192"):
        bound.check(messages)
    with pytest.raises(ValueError, match="bytes per token must be > 0"):
        PromptBound.derive(512, bytes_per_token=0, fallback_bytes=1)


def test_web_pages_of_other_sites_cannot_drive_it(world_model) -> None:
    """The served env's browser guard on ``serve-openai`` too (issue 43): a request carrying
    another site's ``Origin`` gets 403, a ``text/plain`` POST (a browser's "simple" request,
    sent without a preflight) 415; a client without ``Origin`` is served."""
    with serve_in_thread(HFChatModel(world_model), "tiny", max_wait_s=0.01) as server:
        body = json.dumps(request("ls")).encode()
        answers = []
        for headers in ({"Content-Type": "application/json", "Origin": "http://evil.example"},
                        {"Content-Type": "text/plain"},
                        {"Content-Type": "application/json"}):
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            connection.request("POST", "/v1/chat/completions", body, headers)
            answers.append(connection.getresponse().status)
            connection.close()
    assert answers == [403, 415, 200]
