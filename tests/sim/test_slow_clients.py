"""Slow clients (issue 30, item 4) on a real uvicorn server on loopback, configured as both
servers are (:func:`agentworld.sim.server.slow_clients.uvicorn_options`, a 0.5 s header
deadline for the test): a connection that sends part of a request line and stalls, or nothing,
is closed within the deadline; oversized headers get 400; a handler slower than the deadline,
a reused keep-alive connection and a WebSocket held past it are unaffected."""

from __future__ import annotations

import http.client
import socket
import time

import pytest
from agentworld.sim.server.slow_clients import header_deadline_protocol
from agentworld.sim.server.thread import ServerThread
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from websockets.sync.client import connect

DEADLINE_S = 0.5


async def slow(_request) -> PlainTextResponse:
    import asyncio

    await asyncio.sleep(1.5 * DEADLINE_S)  # the deadline covers the headers, not the handler
    return PlainTextResponse("done")


async def echo(websocket) -> None:
    await websocket.accept()
    async for text in websocket.iter_text():
        await websocket.send_text(text)


@pytest.fixture(scope="module")
def server():
    app = Starlette(routes=[Route("/slow", slow), WebSocketRoute("/echo", echo)])
    with ServerThread(app, header_timeout_s=DEADLINE_S) as running:
        yield running


def closed_after(sock: socket.socket, limit_s: float) -> float:
    """Seconds until the server closes ``sock`` (reads return b""); fails past ``limit_s``."""
    started = time.monotonic()
    sock.settimeout(limit_s)
    while sock.recv(1024):
        pass
    return time.monotonic() - started


def test_a_stalled_request_line_is_closed_within_the_deadline(server) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as stalled:
        stalled.sendall(b"GET /sl")
        assert DEADLINE_S * 0.8 < closed_after(stalled, DEADLINE_S + 2.0) < DEADLINE_S + 1.0
    with socket.create_connection(("127.0.0.1", server.port)) as silent:  # sends nothing
        assert closed_after(silent, DEADLINE_S + 2.0) < DEADLINE_S + 1.0
    with socket.create_connection(("127.0.0.1", server.port)) as trickle:  # a byte at a time
        started = time.monotonic()
        with pytest.raises((BrokenPipeError, ConnectionResetError)):
            for byte in b"GET /slow HTTP/1.1\r\nHost: x\r\n" * 10:
                trickle.sendall(bytes([byte]))
                time.sleep(0.05)
        assert time.monotonic() - started < DEADLINE_S + 1.0


def test_headers_over_the_limit_get_400(server) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as big:
        big.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 20000)  # unfinished
        assert big.recv(1024).startswith(b"HTTP/1.1 400")


def test_slow_handlers_keep_alive_and_websockets_are_not_cut(server) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    for _ in range(2):  # the second request reuses the connection after a pause
        connection.request("GET", "/slow")
        response = connection.getresponse()
        assert (response.status, response.read()) == (200, b"done")
        time.sleep(DEADLINE_S / 2)
    connection.close()
    with connect(f"ws://127.0.0.1:{server.port}/echo", open_timeout=5) as ws:
        time.sleep(1.5 * DEADLINE_S)
        ws.send("still here")
        assert ws.recv(timeout=5) == "still here"


def test_the_deadline_must_be_positive() -> None:
    with pytest.raises(ValueError, match="header_timeout_s must be > 0 seconds, got 0"):
        header_deadline_protocol(0)
