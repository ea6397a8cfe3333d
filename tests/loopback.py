"""Loopback servers for tests: HTTP (an OpenAI-compatible chat endpoint, a package index, an
agent model) and a bare listening socket that records who connects.

They stand in for services outside the project (a teacher model, PyPI, an agent behind an
OpenAI-compatible API); the code under test talks to them over real HTTP through its real
clients.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Route = Callable[[str, dict[str, str], bytes], tuple[int, str, bytes]]
"""``route(path, headers, body) -> (status, content_type, body)``."""


@contextmanager
def serve(route: Route) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve ``route`` on 127.0.0.1 in a thread; yields ``(base_url, requests)``.

    ``requests`` collects ``{"method", "path", "headers", "body"}`` of every request.
    """
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, method: str) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(size) if size else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            seen.append({"method": method, "path": self.path, "headers": headers, "body": body})
            status, kind, payload = route(self.path, headers, body)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self._answer("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._answer("POST")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def chat_route(answer: Callable[[dict[str, Any]], str]) -> Route:
    """An OpenAI ``POST /v1/chat/completions`` endpoint whose reply text is ``answer(request_json)``."""

    def route(path: str, headers: dict[str, str], body: bytes) -> tuple[int, str, bytes]:
        if path.rstrip("/") != "/v1/chat/completions":
            return 404, "application/json", b'{"error": {"message": "not found"}}'
        request = json.loads(body)
        reply = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": request["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer(request)},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return 200, "application/json", json.dumps(reply).encode()

    return route


@contextmanager
def accepting(server: socket.socket, timeout_s: float = 3.0) -> Iterator[list[Any]]:
    """Listen on the bound socket ``server`` and accept in a thread; yields the list of
    accepted ``(connection, address)`` pairs (empty when nothing got through). On exit the
    socket is closed and the thread joined."""
    server.listen(1)
    server.settimeout(timeout_s)
    accepted: list[Any] = []

    def accept() -> None:
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield accepted
    finally:
        server.close()
        thread.join(timeout_s + 2)


def free_port() -> int:
    """A TCP port on 127.0.0.1 free when asked (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def serve_cli(
    args: list[str], log: Path, env: dict[str, str] | None = None, start_s: float = 300.0
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``agentworld serve ARGS --port P`` in a subprocess writing to ``log``; yields
    ``(base_url, process)`` once ``GET /health`` answers 200 (the CLI imports every plugin: slow
    on a busy machine, hence ``start_s``). On exit the server gets SIGTERM (30 s to stop, then
    SIGKILL) unless it has stopped already; ``process.returncode`` is then set."""
    import httpx

    port = free_port()
    command = [sys.executable, "-c", "from agentworld.app.cli import main; main()", "serve",
               *args, "--port", str(port)]  # fmt: skip
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + start_s
            while True:
                assert process.poll() is None, log.read_text()
                try:
                    if httpx.get(f"{url}/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, f"the server did not start in {start_s:g} s"
                time.sleep(0.2)
            yield url, process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
