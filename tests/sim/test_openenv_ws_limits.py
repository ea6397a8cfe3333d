"""`agentworld serve` and idle WebSocket connections (issue 30, item 2), on a real server on
loopback over the real FrozenLake env, with the `websockets` client: one client address holds
at most ``max_ws_per_client`` ``/ws`` sessions (the next is closed with 1008 and a reason),
other addresses still get in, and a connection that sends nothing for the idle timeout is
closed with 1001 and its session reclaimed, while a busy one stays open."""

from __future__ import annotations

import json
import socket
import time
from contextlib import ExitStack

import httpx
import pytest

pytest.importorskip("openenv")
from agentworld.core.plugins import get_domain
from agentworld.sim.openenv import RealEnvFactory, create_app
from agentworld.sim.server.thread import ServerThread
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

IDLE_S = 1.0


def open_ws(port: int, address: str) -> ClientConnection:
    """A ``/ws`` connection from source ``address`` (another 127.0.0.0/8 address is another
    client to the server)."""
    sock = socket.socket()
    sock.bind((address, 0))
    sock.connect(("127.0.0.1", port))
    return connect(f"ws://127.0.0.1:{port}/ws", sock=sock, open_timeout=10)


def ask(ws: ClientConnection, message: dict) -> dict:
    ws.send(json.dumps(message))
    return json.loads(ws.recv(timeout=10))


def closed_by_server(ws: ClientConnection, timeout: float) -> tuple[int, str]:
    """``(code, reason)`` of the server's close frame, waited for up to ``timeout`` seconds."""
    with pytest.raises(ConnectionClosed) as closed:
        ws.recv(timeout=timeout)
    assert closed.value.rcvd is not None
    return closed.value.rcvd.code, closed.value.rcvd.reason


@pytest.fixture()
def server():
    factory = RealEnvFactory(get_domain("frozenlake-4x4"))
    app = create_app(factory, name="frozenlake", max_sessions=8, idle_timeout_s=IDLE_S)
    with ServerThread(app) as running:
        yield running


def sessions(server: ServerThread) -> dict:
    return httpx.get(f"http://127.0.0.1:{server.port}/sessions").json()


def test_one_client_cannot_take_every_websocket_slot(server) -> None:
    with ExitStack() as stack:
        mine = [stack.enter_context(open_ws(server.port, "127.0.0.1")) for _ in range(4)]
        for ws in mine:
            assert ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        over = stack.enter_context(open_ws(server.port, "127.0.0.1"))
        refusal = ask(over, {"type": "reset", "data": {}})
        assert refusal["data"]["code"] == "CLIENT_LIMIT"
        assert "127.0.0.1 already holds 4 WebSocket sessions" in refusal["data"]["message"]
        assert closed_by_server(over, 5) == (
            1008,
            "client limit: 4 WebSocket sessions per client",
        )
        # another client gets the other half of the slots
        theirs = [stack.enter_context(open_ws(server.port, "127.0.0.2")) for _ in range(4)]
        for ws in theirs:
            got = ask(ws, {"type": "reset", "data": {"seed": 0}})
            assert got["data"]["observation"]["text"].startswith("agent: row 0, col 0")
        step = ask(theirs[0], {"type": "step", "data": {"text": "right"}})
        assert step["data"]["observation"]["text"].startswith("agent: row 0, col 1")
        assert (sessions(server)["websocket"], sessions(server)["active"]) == (8, 8)


def test_an_idle_websocket_is_closed_and_its_session_reclaimed(server) -> None:
    with open_ws(server.port, "127.0.0.1") as idle, open_ws(server.port, "127.0.0.1") as busy:
        started = time.monotonic()
        ask(idle, {"type": "reset", "data": {"seed": 0}})
        ask(busy, {"type": "reset", "data": {"seed": 0}})
        assert sessions(server)["websocket"] == 2
        for _ in range(5):  # busy: a message every 0.4 s, past the 1 s idle timeout
            time.sleep(0.4)
            assert ask(busy, {"type": "state"})["type"] == "state"
        code, reason = closed_by_server(idle, 0.1)  # closed by now
        assert (code, reason) == (1001, "idle for 1 s (the server's idle timeout)")
        assert time.monotonic() - started >= IDLE_S
        assert (sessions(server)["websocket"], sessions(server)["active"]) == (1, 1)
        assert ask(busy, {"type": "step", "data": {"text": "down"}})["type"] == "observation"
        code, _ = closed_by_server(busy, IDLE_S + 2.0)  # idle in turn
        assert code == 1001
    assert sessions(server)["active"] == 0
