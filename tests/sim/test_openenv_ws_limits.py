"""`agentworld serve` session limits (issue 30 item 2; issue 43 item 2, the many-address
lock-out), on real servers on loopback over the real FrozenLake env, with the `websockets`
client: limits count a client identity, not an address (127.0.0.2 and 127.0.0.3 are one
client), idle time counts resets and steps only (keep-alive `state` messages do not hold a
slot), and a second client identity always gets its fair share of a full server."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from contextlib import ExitStack

import httpx
import pytest

pytest.importorskip("openenv")
from agentworld.core.plugins import get_domain
from agentworld.sim.openenv import (
    ClientLimitError,
    RealEnvFactory,
    SessionKind,
    SessionLimitError,
    SessionManager,
    create_app,
)
from agentworld.sim.openenv.sessions import client_identity
from agentworld.sim.server.thread import ServerThread
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

IDLE_S = 1.0
TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def open_ws(port: int, address: str) -> ClientConnection:
    """A ``/ws`` connection (with the token) from source ``address``."""
    sock = socket.socket()
    sock.bind((address, 0))
    sock.connect(("127.0.0.1", port))
    url = f"ws://127.0.0.1:{port}/ws"
    return connect(url, sock=sock, open_timeout=10, additional_headers=AUTH)


def ask(ws: ClientConnection, message: dict) -> dict:
    ws.send(json.dumps(message))
    return json.loads(ws.recv(timeout=10))


def closed_by_server(ws: ClientConnection, timeout: float) -> tuple[int, str]:
    """``(code, reason)`` of the server's close frame, waited for up to ``timeout`` seconds."""
    with pytest.raises(ConnectionClosed) as closed:
        ws.recv(timeout=timeout)
    assert closed.value.rcvd is not None
    return closed.value.rcvd.code, closed.value.rcvd.reason


def frozenlake() -> RealEnvFactory:
    return RealEnvFactory(get_domain("frozenlake-4x4"))


def running(**limits: object) -> ServerThread:
    options = {"max_sessions": 4, "idle_timeout_s": IDLE_S, "api_key": TOKEN, **limits}
    return ServerThread(create_app(frozenlake(), name="frozenlake", **options))


def sessions(server: ServerThread) -> dict:
    return httpx.get(f"http://127.0.0.1:{server.port}/sessions", headers=AUTH).json()


def test_many_addresses_with_keep_alives_do_not_lock_a_fresh_client_out() -> None:
    """The attack of issue 43: fill every slot from 127.0.0.2 and 127.0.0.3 and keep the
    connections alive with messages that are no action; a fresh client still gets in."""
    with running() as server, ExitStack() as stack:
        hogs = [stack.enter_context(open_ws(server.port, f"127.0.0.{2 + i % 2}")) for i in range(4)]
        for ws in hogs:
            assert ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        with open_ws(server.port, "127.0.0.1") as early:  # full now: the hogs just acted
            assert ask(early, {"type": "reset", "data": {}})["data"]["code"] == "CAPACITY_REACHED"
        started = time.monotonic()
        while time.monotonic() - started < IDLE_S + 0.5:  # keep-alives, no reset or step
            for ws in hogs:
                try:
                    assert ask(ws, {"type": "state"})["type"] == "state"
                except ConnectionClosed:
                    pass
            time.sleep(0.2)
        codes = [closed_by_server(ws, 2.0) for ws in hogs]
        assert codes == [(1001, "idle for 1 s: no reset or step (idle timeout)")] * 4
        with open_ws(server.port, "127.0.0.1") as fresh:
            got = ask(fresh, {"type": "reset", "data": {"seed": 0}})
            assert got["data"]["observation"]["text"].startswith("agent: row 0, col 0")
            assert sessions(server)["websocket"] == 1


def test_a_client_cap_counts_every_loopback_address_as_one_client() -> None:
    with running(max_ws_per_client=2) as server, ExitStack() as stack:
        for address in ("127.0.0.2", "127.0.0.3"):
            ws = stack.enter_context(open_ws(server.port, address))
            assert ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        over = stack.enter_context(open_ws(server.port, "127.0.0.4"))
        refusal = ask(over, {"type": "reset", "data": {}})
        assert refusal["data"]["code"] == "CLIENT_LIMIT"
        assert "client local already holds 2 WebSocket sessions" in refusal["data"]["message"]
        assert closed_by_server(over, 5) == (1008, "client limit: 2 WebSocket sessions per client")
        assert sessions(server)["websocket"] == 2


def test_idle_time_counts_actions_only() -> None:
    with running() as server:
        check_idle_time(server)
        assert sessions(server)["active"] == 0


def check_idle_time(server: ServerThread) -> None:
    with open_ws(server.port, "127.0.0.1") as idle, open_ws(server.port, "127.0.0.1") as chatty, \
            open_ws(server.port, "127.0.0.1") as busy:  # fmt: skip
        started = time.monotonic()
        for ws in (idle, chatty, busy):
            ask(ws, {"type": "reset", "data": {"seed": 0}})
        for _ in range(5):  # past the 1 s idle timeout
            time.sleep(0.4)
            assert ask(busy, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
            try:
                ask(chatty, {"type": "state"})  # a keep-alive: no action
            except ConnectionClosed:
                pass
        for ws in (idle, chatty):
            assert closed_by_server(ws, 0.5)[0] == 1001
        assert time.monotonic() - started >= IDLE_S
        assert (sessions(server)["websocket"], sessions(server)["active"]) == (1, 1)
        assert ask(busy, {"type": "step", "data": {"text": "down"}})["type"] == "observation"
        assert closed_by_server(busy, IDLE_S + 2.0)[0] == 1001  # idle in turn


def test_client_identity() -> None:
    assert {client_identity(a) for a in ("127.0.0.1", "127.0.0.3", "::1", "::ffff:127.0.0.9")} \
        == {"local"}  # fmt: skip
    assert client_identity("10.1.2.3") == "10.1.2.3"
    assert client_identity("::ffff:10.1.2.3") == "10.1.2.3"
    assert client_identity("2001:db8::1") == client_identity("2001:db8::ffff") == "2001:db8::/64"
    assert client_identity("2001:db8:0:1::1") == "2001:db8:0:1::/64"


def test_fair_share_between_client_identities() -> None:
    """One remote client fills the server; a second gets half of it, taken from the first's
    least recently active sessions; local clients alone keep every slot."""

    async def run() -> None:
        manager = SessionManager(frozenlake(), max_sessions=4, idle_timeout_s=600.0)
        reclaimed: list[tuple[str, str]] = []
        first = []
        for _ in range(4):
            session = await manager.open(SessionKind.WEBSOCKET, "10.0.0.1")

            async def note(reason: str, sid: str = session.id) -> None:
                reclaimed.append((sid, reason))

            session.on_reclaim = note
            first.append(session)
            await asyncio.sleep(0.01)
        first[0].touch()  # the most recent actor: reclaimed last
        await manager.open(SessionKind.WEBSOCKET, "10.0.0.2")
        await manager.open(SessionKind.WEBSOCKET, "10.0.0.2")
        assert [sid for sid, _ in reclaimed] == [first[1].id, first[2].id]
        assert reclaimed[0][1] == "reclaimed: fair share: client 10.0.0.1 held over 2 sessions"
        with pytest.raises(SessionLimitError, match="server at capacity: 4 of 4"):
            await manager.open(SessionKind.WEBSOCKET, "10.0.0.2")  # has its share
        await manager.close_all()
        for address in ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"):
            await manager.open(SessionKind.WEBSOCKET, address)  # one identity, every slot
        with pytest.raises(SessionLimitError):
            await manager.open(SessionKind.WEBSOCKET, "127.0.0.6")
        await manager.close_all()
        capped = SessionManager(frozenlake(), 4, 600.0, max_http_per_client=1)
        await capped.open(SessionKind.HTTP, "127.0.0.2")
        with pytest.raises(ClientLimitError, match="client local already holds 1 HTTP"):
            await capped.open(SessionKind.HTTP, "127.0.0.3")
        await capped.close_all()

    asyncio.run(run())


def test_idle_http_sessions_are_swept() -> None:
    async def run() -> None:
        manager = SessionManager(frozenlake(), max_sessions=4, idle_timeout_s=0.3)
        kept = await manager.open(SessionKind.HTTP, "127.0.0.1")
        await manager.open(SessionKind.HTTP, "127.0.0.1")
        await asyncio.sleep(0.2)
        kept.touch()
        await asyncio.sleep(0.2)
        assert await manager.sweep() == 1
        assert manager.get(kept.id) is kept and manager.num_sessions == 1
        await manager.close_all()

    asyncio.run(run())


def this_machines_address() -> str | None:
    """A non-loopback IPv4 address of this machine (a second client identity), or ``None``."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: picks the outgoing address
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_a_second_client_gets_its_share_of_a_full_real_server() -> None:
    """Local clients fill every slot; a client from this machine's network address (another
    identity) gets in, and the least recently active local WebSocket is closed with 1001."""
    address = this_machines_address()
    if address is None:
        pytest.skip("no non-loopback address to connect from")
    app = create_app(frozenlake(), name="frozenlake", max_sessions=4, api_key=TOKEN)
    with ServerThread(app, host="0.0.0.0") as server, ExitStack() as stack:  # noqa: S104
        local = [stack.enter_context(open_ws(server.port, "127.0.0.1")) for _ in range(4)]
        for ws in local:
            ask(ws, {"type": "reset", "data": {"seed": 0}})
        for ws in local[1:]:
            ask(ws, {"type": "step", "data": {"text": "right"}})  # local[0] acted longest ago
        sock = socket.create_connection((address, server.port), source_address=(address, 0))
        remote = stack.enter_context(connect(f"ws://{address}:{server.port}/ws", sock=sock,
                                             additional_headers=AUTH, open_timeout=10))  # fmt: skip
        got = ask(remote, {"type": "reset", "data": {"seed": 0}})
        assert got["data"]["observation"]["text"].startswith("agent: row 0, col 0")
        assert closed_by_server(local[0], 5) == (
            1001, "reclaimed: fair share: client local held over 2 sessions",
        )  # fmt: skip
        assert ask(local[1], {"type": "state"})["type"] == "state"  # the others go on
        assert sessions(server)["websocket"] == 4
