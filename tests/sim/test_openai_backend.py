"""Our OpenAI-compatible server (real uvicorn on loopback, real tiny checkpoints) and the
``openai`` backend talking to it: predictions equal the ``hf`` backend's for greedy requests."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import torch

from agentworld.core import plugins
from agentworld.core.formats import OBS_CLOSE
from agentworld.sim import SimVectorEnv
from agentworld.sim.backends.hf import HFBackend
from agentworld.sim.backends.openai_client import OpenAIWorldModel
from agentworld.sim.engine import EngineLoop, PagedEngine
from agentworld.sim.generation import StaticBatchEngine
from agentworld.sim.sampling import SamplingParams
from agentworld.sim.server import ChatRequest, HFChatModel, serve_in_thread
from agentworld.sim.server.chat import RequestError
from agentworld.sim.batcher import Batcher
from chatml import chat_requests

SYSTEM = {"role": "system", "content": "You simulate a Linux terminal.\n\nInitial observation:\n$ "}


def requests(n: int) -> list[list[dict[str, str]]]:
    """``n`` requests with histories of different lengths."""
    return chat_requests(SYSTEM, n)


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    """``(status, JSON body)`` of a POST; ``body`` bytes are sent as they are."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


class CountingEngine:
    """The world model's real token engine, recording the batch size of every call."""

    def __init__(self, inner: Any):
        self.inner, self.calls = inner, []

    def generate(self, prompts, params, **kwargs):  # noqa: ANN001, ANN003, ANN201
        self.calls.append(len(prompts))
        return self.inner.generate(prompts, params, **kwargs)

    def __getattr__(self, name: str) -> Any:  # the rest of the engine's API, unchanged
        return getattr(self.inner, name)


def static_engine(wm: Any) -> CountingEngine:
    """A counting static engine, as the ``hf`` backend builds it (stops at the observation end)."""
    engine = StaticBatchEngine(
        wm.model,
        pad_token_id=wm.tokenizer.pad_token_id,
        stop_token_ids=wm.stop_ids,
        stop_strings=(OBS_CLOSE,),
        decode=wm.tokenizer.decode,
        max_positions=wm.max_positions,
    )
    return CountingEngine(engine)


class CountingPaged(PagedEngine):
    """The paged engine (per-request sampling parameters), recording every generate call and
    the requests in flight at every step."""

    def __init__(self, wm: Any):
        super().__init__(wm.model, stop_token_ids=wm.stop_ids, decode=wm.tokenizer.decode)
        self.calls: list[int] = []
        self.in_flight: list[int] = []

    def step(self):  # noqa: ANN201
        self.in_flight.append(len(self._requests))
        return super().step()

    def generate(self, prompts, params, **kwargs):  # noqa: ANN001, ANN003, ANN201
        self.calls.append(len(prompts))
        return super().generate(prompts, params, **kwargs)


@pytest.fixture(scope="module")
def paged_server(qwen3_dir: Path):
    """A server for the random tiny Qwen3 whose engine is the paged engine."""
    wm = HFBackend().load(str(qwen3_dir))
    wm.engine = EngineLoop(CountingPaged(wm))
    with serve_in_thread(HFChatModel(wm), "tiny", max_wait_s=0.05, max_n=4) as server:
        yield server, wm


@pytest.fixture(scope="module")
def random_server(qwen3_dir: Path):
    """A server for the random tiny Qwen3 (context 512) and the hf model it serves."""
    wm = HFBackend().load(str(qwen3_dir), max_new_tokens=24)
    wm.engine = static_engine(wm)
    with serve_in_thread(HFChatModel(wm), "tiny", max_wait_s=0.05, max_n=4) as server:
        yield server, wm


@pytest.mark.parametrize(
    ("checkpoint", "engine"),
    [("qwen3_dir", "static"), ("qwen3_dir", "paged"), ("trained_dir", "static")],
)
def test_openai_backend_equals_hf_backend(
    checkpoint: str, engine: str, request: pytest.FixtureRequest
) -> None:
    path = str(request.getfixturevalue(checkpoint))
    reference = HFBackend().load(path, max_new_tokens=32).predict(requests(7))
    served = HFBackend().load(path)
    served.engine = CountingPaged(served) if engine == "paged" else static_engine(served)
    with serve_in_thread(HFChatModel(served), "wm", max_wait_s=0.2) as server:
        backend = plugins.get_sim_backend("openai")
        client = backend.load("wm", base_url=server.base_url, max_new_tokens=32)
        predictions = client.predict(requests(7))
        batches = server.app.state.batcher.batch_sizes
    assert [p.text for p in predictions] == [p.text for p in reference]
    assert [p.observation for p in predictions] == [p.observation for p in reference]
    assert [p.num_tokens for p in predictions] == [p.num_tokens for p in reference]
    assert sum(batches) == 7 and max(batches) > 1  # concurrent requests were gathered
    assert len(served.engine.calls) == len(batches)  # one generate call per batch
    if checkpoint == "trained_dir":
        assert {p.observation for p in predictions} == {"hello.txt"}
        assert all(p.text.endswith("</predicted_observation>") for p in predictions)


def test_chat_completion_body_usage_models_and_health(random_server) -> None:
    server, wm = random_server
    messages = requests(2)[1]
    status, body = post(
        f"{server.base_url}/chat/completions",
        {"model": "tiny", "messages": messages, "temperature": 0, "max_tokens": 12},
    )
    assert status == 200 and body["object"] == "chat.completion" and body["model"] == "tiny"
    [choice] = body["choices"]
    assert choice["index"] == 0 and choice["message"]["role"] == "assistant"
    prompt = wm.render(messages)
    output = wm.engine.inner.generate([prompt], SamplingParams(max_new_tokens=12))[0]
    assert choice["message"]["content"] == wm.tokenizer.decode(
        [t for t in output.token_ids if t not in wm.stop_ids], skip_special_tokens=True
    )
    usage = body["usage"]
    assert usage["prompt_tokens"] == len(prompt)
    assert usage["completion_tokens"] == len(output.token_ids) <= 12
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert choice["finish_reason"] == ("length" if len(output.token_ids) == 12 else "stop")

    status, models = get(f"{server.base_url}/models")
    assert status == 200 and [(m["id"], m["max_model_len"]) for m in models["data"]] == [
        ("tiny", 512)
    ]
    assert get(f"http://127.0.0.1:{server.port}/health") == (200, {"status": "ok"})


def test_n_top_p_max_tokens_and_stop(random_server) -> None:
    server, _ = random_server
    url = f"{server.base_url}/chat/completions"
    messages = requests(1)[0]
    _, greedy = post(
        url, {"model": "tiny", "messages": messages, "temperature": 0, "max_tokens": 20}
    )
    text = greedy["choices"][0]["message"]["content"]

    _, three = post(
        url, {"model": "tiny", "messages": messages, "temperature": 0, "max_tokens": 20, "n": 3}
    )
    assert [c["message"]["content"] for c in three["choices"]] == [text] * 3
    assert [c["index"] for c in three["choices"]] == [0, 1, 2]
    assert three["usage"]["completion_tokens"] == 3 * greedy["usage"]["completion_tokens"]
    assert three["usage"]["prompt_tokens"] == greedy["usage"]["prompt_tokens"]

    # temperature 1 with a tiny nucleus keeps only the top token: greedy again
    _, nucleus = post(
        url,
        {"model": "tiny", "messages": messages, "temperature": 1, "top_p": 1e-6, "max_tokens": 20},
    )
    assert nucleus["choices"][0]["message"]["content"] == text

    _, short = post(url, {"model": "tiny", "messages": messages, "temperature": 0, "max_tokens": 3})
    assert (
        short["choices"][0]["finish_reason"] == "length"
        and short["usage"]["completion_tokens"] == 3
    )

    stop = text[8:11]
    assert stop and text.find(stop) >= 1
    _, stopped = post(
        url,
        {
            "model": "tiny",
            "messages": messages,
            "temperature": 0,
            "max_tokens": 20,
            "stop": [stop, "never seen"],
        },
    )
    choice = stopped["choices"][0]
    assert choice["message"]["content"] == text[: text.find(stop)]
    assert choice["finish_reason"] == "stop"
    assert stopped["usage"]["completion_tokens"] < greedy["usage"]["completion_tokens"]


def test_per_request_params_one_call_seeds_and_logprobs(paged_server) -> None:
    """With the paged engine, requests with different sampling parameters run in one batch;
    seeds make sampling reproducible whatever the batch; logprobs are the model's."""
    server, wm = paged_server
    messages = requests(1)[0]
    chat = HFChatModel(wm)
    seeded = ChatRequest(messages, max_tokens=12, n=2, temperature=1.5, seed=3)
    scored = ChatRequest(messages, max_tokens=4, temperature=0.0, logprobs=True)
    before = len(wm.engine.engine.in_flight)
    direct = chat.generate([chat.prepare(seeded), chat.prepare(scored)])
    assert wm.engine.engine.in_flight[before] == 3  # three rows, mixed parameters, one batch

    url = f"{server.base_url}/chat/completions"
    body = {"model": "tiny", "messages": messages, "temperature": 1.5, "max_tokens": 12}
    body |= {"seed": 3, "n": 2}
    texts = [[c["message"]["content"] for c in post(url, body)[1]["choices"]] for _ in range(2)]
    assert texts[0] == texts[1] == [c.text for c in direct[0].choices]
    assert texts[0][0] != texts[0][1]  # choice i samples with seed + i

    body = {"model": "tiny", "messages": messages, "temperature": 0, "max_tokens": 4}
    status, answer = post(url, body | {"logprobs": True})
    content = answer["choices"][0]["logprobs"]["content"]
    assert status == 200 and len(content) == answer["usage"]["completion_tokens"] == 4
    tokens, values = zip(*direct[1].choices[0].logprobs, strict=True)
    assert [t["token"] for t in content] == list(tokens)
    assert [t["logprob"] for t in content] == pytest.approx(values, abs=1e-5)
    prompt = torch.tensor([wm.render(messages)])
    with torch.no_grad():
        logits = wm.model(input_ids=prompt).logits[0, -1].float()
    best = torch.log_softmax(logits, dim=-1).max().item()
    assert content[0]["logprob"] == pytest.approx(best, abs=1e-4) and best < 0
    assert content[0]["token"] == wm.tokenizer.decode([int(logits.argmax())])


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        ({"model": "other", "messages": [SYSTEM]}, 404, "model"),
        ({"model": "tiny", "messages": []}, 400, "messages"),
        ({"model": "tiny"}, 400, "messages"),
        ({"model": "tiny", "messages": [{"role": "robot", "content": "x"}]}, 400, "messages"),
        ({"model": "tiny", "messages": [SYSTEM], "max_tokens": 0}, 400, "max_tokens"),
        ({"model": "tiny", "messages": [SYSTEM], "temperature": 3}, 400, "temperature"),
        ({"model": "tiny", "messages": [SYSTEM], "n": 5}, 400, "n"),
        ({"model": "tiny", "messages": [SYSTEM], "stream": True}, 400, None),
        ({"model": "tiny", "messages": [SYSTEM], "max_tokens": 600}, 400, "max_tokens"),
        (
            {"model": "tiny", "messages": [{"role": "user", "content": "word " * 600}]},
            400,
            "messages",
        ),
        (b"{not json", 400, None),
    ],
)
def test_bad_requests_get_json_errors(
    random_server, body: Any, status: int, param: str | None
) -> None:
    server, _ = random_server
    got, answer = post(f"{server.base_url}/chat/completions", body)
    assert got == status
    error = answer["error"]
    assert error["message"] and error["param"] == param
    assert error["type"] == ("not_found_error" if status == 404 else "invalid_request_error")
    if body == {"model": "tiny", "messages": [SYSTEM], "stream": True}:
        assert "stream" in error["message"]
    if param == "max_tokens" and got == 400 and "600" in json.dumps(body):
        assert "maximum context length is 512" in error["message"]


def test_unknown_route_and_api_key(qwen3_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wm = HFBackend().load(str(qwen3_dir), max_new_tokens=8)
    with serve_in_thread(HFChatModel(wm), "tiny", api_key="s3cret") as server:
        assert get(f"http://127.0.0.1:{server.port}/nope")[0] == 404
        status, answer = post(
            f"{server.base_url}/chat/completions", {"model": "tiny", "messages": [SYSTEM]}
        )
        assert status == 401 and answer["error"]["code"] == "invalid_api_key"
        status, _ = post(
            f"{server.base_url}/chat/completions",
            {"model": "tiny", "messages": [SYSTEM], "max_tokens": 2},
            {"Authorization": "Bearer s3cret"},
        )
        assert status == 200
        monkeypatch.setenv("OPENAI_API_KEY", "s3cret")  # the key configured with this URL
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        [prediction] = OpenAIWorldModel("tiny", base_url=server.base_url).predict(
            requests(1), max_new_tokens=4
        )
        assert prediction.num_tokens == 4
        monkeypatch.setenv("OPENAI_API_KEY", "wrong")
        with pytest.raises(RuntimeError, match="tiny"):
            OpenAIWorldModel("tiny", base_url=server.base_url).predict(requests(1))


def test_refused_request_fails_alone_and_unreachable_server_raises(random_server) -> None:
    server, wm = random_server
    client = OpenAIWorldModel("tiny", base_url=server.base_url, max_tokens=16)
    too_long = [SYSTEM, {"role": "user", "content": "word " * 600}]
    good, bad = client.predict([requests(1)[0], too_long])
    assert bad.observation is None and bad.text == "" and bad.num_tokens == 0
    assert good.text == wm.predict(requests(1), max_new_tokens=16)[0].text
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = OpenAIWorldModel("tiny", base_url=f"http://127.0.0.1:{port}/v1", retries=0, timeout=5)
    with pytest.raises(RuntimeError, match=str(port)):
        dead.predict(requests(1))


def test_vector_env_over_the_openai_backend(trained_dir: Path) -> None:
    served = HFBackend().load(str(trained_dir))
    with serve_in_thread(HFChatModel(served), "wm") as server:
        client = OpenAIWorldModel("wm", base_url=server.base_url, max_tokens=40)
        envs = SimVectorEnv(client, 4, initial_observation="$ ", max_steps=3)
        envs.reset(seed=0)
        obs, rewards, terminations, truncations, infos = envs.step(["ls", "pwd", "cat a", "echo"])
        envs.close()
    assert obs == ("hello.txt",) * 4 and not truncations.any() and infos["parsed"].all()


def test_batcher_gathers_concurrent_submissions() -> None:
    calls: list[list[int]] = []

    def run(items):  # noqa: ANN001, ANN202
        calls.append(list(items))
        if 13 in items:
            raise ValueError("bad item")
        return [x * 10 for x in items]

    batcher = Batcher(run, max_batch=4, max_wait_s=0.05)

    async def main() -> list[Any]:
        first = await asyncio.gather(*(batcher.submit(i) for i in range(6)))
        failed = await asyncio.gather(batcher.submit(13), batcher.submit(1), return_exceptions=True)
        return [first, failed]

    first, failed = asyncio.run(main())
    assert first == [0, 10, 20, 30, 40, 50]
    assert calls[:2] == [[0, 1, 2, 3], [4, 5]]
    # the failed batch [13, 1] is retried item by item: only 13 fails
    assert batcher.batch_sizes == [4, 2, 2, 1, 1]
    assert isinstance(failed[0], ValueError) and failed[1] == 10


def test_prepare_resolves_token_limits(qwen3_dir: Path) -> None:
    chat = HFChatModel(HFBackend().load(str(qwen3_dir)), default_max_tokens=100)
    prepared = chat.prepare(ChatRequest(messages=[SYSTEM]))
    assert prepared.prompt_ids == chat.world_model.render([SYSTEM])
    assert prepared.max_tokens == 100  # the default, well inside the 512-token context
    long = [SYSTEM, {"role": "user", "content": "word " * 200}]
    room = 512 - len(chat.world_model.render(long))
    assert 0 < room < 100 and chat.prepare(ChatRequest(messages=long)).max_tokens == room
    assert chat.prepare(ChatRequest(messages=long, max_tokens=room)).max_tokens == room
    with pytest.raises(RequestError) as info:
        chat.prepare(ChatRequest(messages=long, max_tokens=room + 1))
    assert info.value.param == "max_tokens" and "512" in str(info.value)


def test_static_engine_refuses_logprobs(random_server) -> None:
    server, _ = random_server
    body = {"model": "tiny", "messages": [SYSTEM], "max_tokens": 2, "logprobs": True}
    status, answer = post(f"{server.base_url}/chat/completions", body)
    assert status == 400 and "logprobs" in answer["error"]["message"]  # never made up


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_cli_serve_openai(trained_dir: Path, tmp_path: Path) -> None:
    """`agentworld serve-openai` in a subprocess, as a user runs it, answers the backend."""
    port = free_port()
    command = [
        sys.executable,
        "-c",
        "from agentworld.app.cli import main; main()",
        "serve-openai",
        str(trained_dir),
        "--port",
        str(port),
        "--device",
        "cpu",
        "--served-model-name",
        "wm",
    ]
    log = (tmp_path / "server.log").open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ})
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, (tmp_path / "server.log").read_text()
            try:
                if get(f"http://127.0.0.1:{port}/health")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the server did not start in 120 s"
            time.sleep(0.2)
        client = OpenAIWorldModel("wm", base_url=f"http://127.0.0.1:{port}/v1", max_tokens=40)
        predictions = client.predict(requests(3))
        assert [p.observation for p in predictions] == ["hello.txt"] * 3
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
