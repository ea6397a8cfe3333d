"""Sessions of the OpenEnv server: one env each, run on its own worker thread.

Every session (a WebSocket connection, an HTTP or MCP session, or the fresh env of a
stateless HTTP request) takes one of ``max_sessions`` slots. A session's env is created,
stepped and closed on one dedicated thread (real envs such as pseudo-terminals or browsers are
thread-affine), so a slow step never blocks the event loop or the other sessions.
All methods run on the server's event loop.

**Who a client is.** Limits count sessions per client *identity* (:func:`client_identity`),
not per address: every loopback address (``127.0.0.0/8``, ``::1``) is one identity, ``local``,
since a local process picks any of them; an IPv6 client is its ``/64`` network. Using
``127.0.0.2`` and ``127.0.0.3`` thus buys no more sessions than ``127.0.0.1``.

**Idle means no action.** A session's idle time counts from its last action (a reset or a
step, over any route), not from its last message: ``state`` requests, MCP pings or keep-alive
messages do not keep a session. A WebSocket connection with no action for ``idle_timeout_s``
is closed with its session (see :mod:`.ws`); HTTP sessions idle that long are closed by
:meth:`SessionManager.sweep` (the app runs it periodically) and whenever a slot is needed.

**Fair share.** When all slots (or all HTTP slots) are taken and a client asks for one: first
an idle session is reclaimed; else, if the asking identity holds fewer than its fair share
(the slots divided by the identities holding them, counting the new one) and another
identity holds more, the least recently active session of the identity holding the most is
reclaimed (a WebSocket is closed with code 1001 and the reason). One identity alone (all
local clients) may use every slot; a second one always gets its share.

HTTP sessions (``POST /sessions``, MCP sessions) take at most ``max_http_sessions`` slots
together (by default half, so WebSocket clients always find room). Optional hard caps per
identity: ``max_http_per_client`` and ``max_ws_per_client``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

from agentworld.sim.openenv.envs import ServedEnv

T = TypeVar("T")

LOCAL = "local"
"""The identity of every loopback client."""


def client_identity(address: str | None) -> str | None:
    """The identity limits count a client by: ``"local"`` for any loopback address, the
    ``/64`` network (``"2001:db8::/64"``) for IPv6, the address itself for IPv4 (an
    IPv4-mapped IPv6 address as its IPv4 address); ``None`` and non-addresses as given."""
    if address is None:
        return None
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return LOCAL
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


class SessionKind(Enum):
    WEBSOCKET = "websocket"
    HTTP = "http"  # opened by POST /sessions, addressed by session_id
    ONE_SHOT = "one-shot"  # the fresh env of one stateless HTTP request


class SessionLimitError(RuntimeError):
    """All ``max_sessions`` slots are taken (HTTP 503)."""


class ClientLimitError(SessionLimitError):
    """This client identity holds as many HTTP (or WebSocket) sessions as one may, or HTTP
    sessions hold all the slots they may take (HTTP 429; WebSocket close code 1008)."""


class UnknownSessionError(KeyError):
    """No open session has this id."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(slots=True)
class Session:
    id: str
    kind: SessionKind
    executor: ThreadPoolExecutor = field(repr=False)
    env: ServedEnv | None = None
    client: str | None = None  # the client's identity (see client_identity)
    last_action_s: float = field(default_factory=time.monotonic)  # opened, or last reset/step
    # called (with the reason) when the manager reclaims the session: a WebSocket closes
    on_reclaim: Callable[[str], Awaitable[None]] | None = field(default=None, repr=False)

    def touch(self) -> None:
        """Record an action (a reset or a step): the idle time starts again."""
        self.last_action_s = time.monotonic()

    def idle_s(self) -> float:
        """Seconds since the session was opened or last acted."""
        return time.monotonic() - self.last_action_s

    async def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)`` on this session's thread (no action is recorded:
        callers :meth:`touch` for resets and steps)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self.executor, functools.partial(function, *args, **kwargs)
        )


class SessionManager:
    """Opens, finds and closes sessions, at most ``max_sessions`` at a time.

    Args:
        factory: Makes the env of a new session (called on the session's thread).
        max_sessions: Most sessions open at once (all kinds together).
        idle_timeout_s: Sessions with no action for this long (seconds) are closed: HTTP ones
            by :meth:`sweep` and when a slot is needed, WebSocket connections by :mod:`.ws`;
            ``None`` keeps them until ``DELETE /sessions/{id}`` or the client closes.
        max_http_sessions: Most HTTP sessions at once (default ``max(1, max_sessions // 2)``).
        max_http_per_client: Most HTTP sessions of one client identity at once (default:
            no cap but the fair share).
        max_ws_per_client: Most WebSocket sessions of one client identity at once (default:
            no cap but the fair share).

    Raises:
        ValueError: A limit below 1.
    """

    def __init__(
        self,
        factory: Callable[[], ServedEnv],
        max_sessions: int,
        idle_timeout_s: float | None = 600.0,
        *,
        max_http_sessions: int | None = None,
        max_http_per_client: int | None = None,
        max_ws_per_client: int | None = None,
    ):
        if idle_timeout_s is not None and not idle_timeout_s > 0:
            raise ValueError(f"idle_timeout_s must be > 0 seconds or None, got {idle_timeout_s}")
        if max_http_sessions is None:
            max_http_sessions = max(1, max_sessions // 2)
        for name, value in (
            ("max_sessions", max_sessions),
            ("max_http_sessions", max_http_sessions),
            ("max_http_per_client", max_http_per_client),
            ("max_ws_per_client", max_ws_per_client),
        ):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        self.factory, self.max_sessions, self.idle_timeout_s = factory, max_sessions, idle_timeout_s
        self.max_http_sessions, self.max_http_per_client = max_http_sessions, max_http_per_client
        self.max_ws_per_client = max_ws_per_client
        self._sessions: dict[str, Session] = {}

    @property
    def num_sessions(self) -> int:
        return len(self._sessions)

    def count(self, kind: SessionKind) -> int:
        return sum(s.kind is kind for s in self._sessions.values())

    async def open(self, kind: SessionKind, client: str | None = None) -> Session:
        """A new session with a freshly made env for ``client`` (an address, counted by its
        :func:`client_identity`), reclaiming an idle or over-share session when the slots
        are full (see the module docstring).

        Raises:
            ClientLimitError: An HTTP session over ``max_http_per_client`` for the client's
                identity or over ``max_http_sessions`` in all, or a WebSocket session over
                ``max_ws_per_client`` for the identity.
            SessionLimitError: ``max_sessions`` sessions are open and none can be reclaimed.
            Exception: Whatever the factory raised (the slot is released).
        """
        identity = client_identity(client)
        if kind is SessionKind.HTTP:
            await self._check_cap(kind, identity)
            http = lambda s: s.kind is SessionKind.HTTP  # noqa: E731
            if self._count_where(http) >= self.max_http_sessions:
                await self._make_room(http, self.max_http_sessions, identity)
            if self._count_where(http) >= self.max_http_sessions:
                raise ClientLimitError(
                    f"all {self.max_http_sessions} HTTP session slots are in use; the "
                    "remaining slots are kept for WebSocket sessions (/ws); retry later"
                )
        if len(self._sessions) >= self.max_sessions:
            await self._make_room(lambda s: True, self.max_sessions, identity)
        if len(self._sessions) >= self.max_sessions:
            raise SessionLimitError(
                f"server at capacity: {len(self._sessions)} of {self.max_sessions} sessions "
                "in use (--max-sessions); close a session or retry later"
            )
        if kind is SessionKind.WEBSOCKET:
            await self._check_cap(kind, identity)
        session = Session(
            uuid.uuid4().hex, kind, ThreadPoolExecutor(1, "openenv-session"), client=identity
        )
        self._sessions[session.id] = session  # reserve the slot before the first await
        try:
            session.env = await session.run(self.factory)
        except BaseException:
            self._sessions.pop(session.id, None)
            session.executor.shutdown(wait=False)
            raise
        return session

    def get(self, session_id: str) -> Session:
        """The open session ``session_id``.

        Raises:
            UnknownSessionError: No such session (never opened, closed, or still opening).
        """
        session = self._sessions.get(session_id)
        if session is None or session.env is None:
            raise UnknownSessionError(f"unknown session {session_id!r} (closed or never opened)")
        return session

    async def close(self, session_id: str) -> None:
        """Close a session's env on its thread and free its slot; unknown ids are ignored."""
        session = self._sessions.pop(session_id, None)
        if session is None:
            return
        try:
            if session.env is not None:
                await session.run(session.env.close)
        finally:
            session.executor.shutdown(wait=False)

    async def close_all(self) -> None:
        """Close every session."""
        for session_id in list(self._sessions):
            await self.close(session_id)

    async def sweep(self) -> int:
        """Close the HTTP sessions with no action for ``idle_timeout_s``; the number closed."""
        if self.idle_timeout_s is None:
            return 0
        idle = [
            s for s in self._sessions.values()
            if s.kind is SessionKind.HTTP and s.env is not None
            and s.idle_s() > self.idle_timeout_s
        ]  # fmt: skip
        for session in idle:
            await self._reclaim(session, f"no action for {self.idle_timeout_s:g} s")
        return len(idle)

    async def sweep_forever(self) -> None:
        """:meth:`sweep` every ``min(idle_timeout_s / 2, 30)`` seconds until cancelled."""
        if self.idle_timeout_s is None:
            return
        while True:
            await asyncio.sleep(min(self.idle_timeout_s / 2, 30.0))
            await self.sweep()

    async def _check_cap(self, kind: SessionKind, identity: str | None) -> None:
        """Raise :class:`ClientLimitError` if ``identity`` holds its cap of ``kind`` sessions
        (after reclaiming one of its idle ones)."""
        cap = self.max_http_per_client if kind is SessionKind.HTTP else self.max_ws_per_client
        if cap is None:
            return
        mine = lambda s: s.kind is kind and s.client == identity  # noqa: E731
        if self._count_where(mine) >= cap:
            await self._reclaim_idle(mine)
        if self._count_where(mine) >= cap:
            flag = "--max-sessions-per-client" if kind is SessionKind.HTTP \
                else "--max-ws-per-client"  # fmt: skip
            raise ClientLimitError(
                f"client {identity} already holds {cap} {_NAMES[kind]} sessions ({flag}; "
                "every loopback address is one client); close one first"
            )

    def _count_where(self, keep: Callable[[Session], bool]) -> int:
        return sum(keep(s) for s in self._sessions.values())

    def _reclaimable(self, keep: Callable[[Session], bool]) -> list[Session]:
        """Open sessions (env made) that ``keep`` selects, one-shot requests aside."""
        return [
            s for s in self._sessions.values()
            if keep(s) and s.kind is not SessionKind.ONE_SHOT and s.env is not None
        ]  # fmt: skip

    async def _reclaim_idle(self, keep: Callable[[Session], bool]) -> bool:
        """Reclaim the longest-idle session ``keep`` selects if it is past the idle timeout."""
        if self.idle_timeout_s is None:
            return False
        idle = [s for s in self._reclaimable(keep) if s.idle_s() > self.idle_timeout_s]
        if not idle:
            return False
        oldest = min(idle, key=lambda s: s.last_action_s)
        await self._reclaim(oldest, f"no action for {self.idle_timeout_s:g} s, slot needed")
        return True

    async def _make_room(
        self, keep: Callable[[Session], bool], slots: int, identity: str | None
    ) -> None:
        """Free one of the ``slots`` sessions ``keep`` selects for ``identity``: an idle one,
        else one of the identity holding the most, if ``identity`` is below its fair share
        and that one above it."""
        if await self._reclaim_idle(keep):
            return
        candidates = self._reclaimable(keep)
        held = Counter(s.client for s in candidates)
        share = max(1, slots // len(set(held) | {identity}))
        if held[identity] >= share or not held:
            return
        biggest = max(held, key=lambda c: held[c])
        if held[biggest] <= share:
            return
        victim = min((s for s in candidates if s.client == biggest), key=lambda s: s.last_action_s)
        await self._reclaim(victim, f"fair share: client {biggest} held over {share} sessions")

    async def _reclaim(self, session: Session, reason: str) -> None:
        if session.on_reclaim is not None:
            with contextlib.suppress(Exception):
                await session.on_reclaim(f"reclaimed: {reason}")
        await self.close(session.id)


_NAMES = {SessionKind.HTTP: "HTTP", SessionKind.WEBSOCKET: "WebSocket"}
