"""Attacks on `serve-openai` (issue 22, items 8 to 10), tried on a real uvicorn server over a
real tiny checkpoint: a huge body is refused with 413 before it is read while /health stays
fast, one bad request (``seed: 1e30``) gets 400 alone while the requests batched with it
succeed, and the server refuses a non-loopback bind without an API key."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from agentworld.sim.backends.hf import HFBackend
from agentworld.sim.server import HFChatModel, serve_in_thread
from agentworld.sim.server.auth import check_exposure, is_loopback

SYSTEM = {"role": "system", "content": "You simulate a Linux terminal.\n\nInitial observation:\n$ "}


def post(port: int, path: str, body: bytes, headers: dict[str, str] | None = None):
    """``(status, JSON body)`` of a POST of raw ``body`` bytes."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(
            "POST", path, body, {"Content-Type": "application/json", **(headers or {})}
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.fixture(scope="module")
def server(qwen3_dir: Path):
    wm = HFBackend().load(str(qwen3_dir), max_new_tokens=4)
    with serve_in_thread(
        HFChatModel(wm), "tiny", max_wait_s=0.2, max_batch=16, max_body_bytes=1024 * 1024
    ) as running:
        yield running


def test_a_huge_body_gets_413_before_it_is_read_and_health_stays_fast(server) -> None:
    """50 MB declared, 2 MiB actually sent slowly: refused at once, the server keeps serving."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {50 * 1024 * 1024}\r\n\r\n"
    )
    started = time.monotonic()
    sock.sendall(head.encode() + b'{"model": "tiny", "messages": [')
    response = http.client.HTTPResponse(sock)
    response.begin()
    body = json.loads(response.read())
    refused_s = time.monotonic() - started
    sock.close()
    assert response.status == 413
    assert body["error"]["code"] == "request_too_large" and "1048576" in body["error"]["message"]
    assert refused_s < 2.0

    # a chunked body (no Content-Length) is cut off as it passes the limit
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    chunks = (b"x" * 65536 for _ in range(40))  # 2.5 MiB
    connection.request(
        "POST",
        "/v1/chat/completions",
        chunks,
        {"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        encode_chunked=True,
    )
    assert connection.getresponse().status == 413
    connection.close()

    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    connection.request("GET", "/health")
    assert connection.getresponse().status == 200 and time.monotonic() - started < 1.0
    connection.close()


def test_one_bad_request_gets_400_alone_while_its_batch_succeeds(server) -> None:
    good = {"model": "tiny", "messages": [SYSTEM], "max_tokens": 2, "temperature": 0}
    bodies = [dict(good) for _ in range(6)]
    bodies.insert(3, {**good, "seed": 1e30})
    bodies.insert(5, {**good, "top_k": 10**30})
    bodies.insert(6, {**good, "seed": 2**64})  # an integer that no torch generator takes
    with ThreadPoolExecutor(len(bodies)) as pool:  # submitted together: one batch
        results = list(
            pool.map(
                lambda b: post(server.port, "/v1/chat/completions", json.dumps(b).encode()), bodies
            )
        )
    statuses = [status for status, _ in results]
    assert statuses == [200, 200, 200, 400, 200, 400, 400, 200, 200]
    assert results[3][1]["error"]["param"] == "seed"
    assert results[5][1]["error"]["param"] == "top_k"
    assert results[6][1]["error"]["param"] == "seed"
    assert "less than or equal to 9223372036854775807" in results[6][1]["error"]["message"]
    texts = {
        answer["choices"][0]["message"]["content"] for status, answer in results if status == 200
    }
    assert len(texts) == 1  # greedy: every good request got the same real answer
    # the largest accepted seed still runs
    status, _ = post(
        server.port, "/v1/chat/completions", json.dumps({**good, "seed": 2**63 - 1}).encode()
    )
    assert status == 200


def test_non_loopback_bind_needs_an_api_key(qwen3_dir: Path) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    check_exposure("127.0.0.1", None)
    check_exposure("0.0.0.0", "key")
    check_exposure("0.0.0.0", None, no_auth=True)  # accepted, with a warning
    with pytest.raises(ValueError, match="AGENTWORLD_API_KEY"):
        check_exposure("0.0.0.0", None)
    from agentworld.sim.server.openai_server import serve

    with pytest.raises(ValueError, match="--no-auth"):  # refused before the model loads
        serve(str(qwen3_dir), host="0.0.0.0", port=0)


def test_api_key_from_the_environment(qwen3_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentworld.core import plugins
    from agentworld.app.cli import app
    from typer.testing import CliRunner

    if not any(c.name == "serve" for c in app.registered_commands):
        plugins.load_plugins().hook.register_commands(cli=app)
    monkeypatch.delenv("AGENTWORLD_API_KEY", raising=False)
    result = CliRunner().invoke(app, ["serve-openai", str(qwen3_dir), "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "API key" in result.output
    monkeypatch.setenv("AGENTWORLD_API_KEY", "k")  # a key from the environment is taken
    result = CliRunner().invoke(app, ["serve-openai", "/nowhere/ckpt", "--host", "0.0.0.0"])
    assert "API key" not in result.output and "/nowhere/ckpt" in str(result.exception)
    # `serve` makes and prints a token of its own when none is given (even on loopback), so it
    # has no keyless refusal to test here: tests/sim/test_openenv_security.py covers it


def test_batch_failure_is_retried_per_request() -> None:
    import asyncio

    from agentworld.sim.batcher import Batcher

    def run(items):
        if 13 in items:
            raise ValueError("bad item")
        return [x * 10 for x in items]

    batcher = Batcher(run, max_batch=8, max_wait_s=0.05)

    async def main():
        return await asyncio.gather(
            *(batcher.submit(i) for i in (1, 13, 2)), return_exceptions=True
        )

    first, bad, second = asyncio.run(main())
    assert (first, second) == (10, 20) and isinstance(bad, ValueError)
    assert batcher.batch_sizes == [3, 1, 1, 1]
    assert threading.active_count() >= 1
