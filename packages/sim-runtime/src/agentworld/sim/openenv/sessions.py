"""Sessions of the OpenEnv server: one env each, run on its own worker thread.

Every session (a WebSocket connection, an HTTP session, or the fresh env of a stateless
HTTP request) takes one of ``max_sessions`` slots. A session's env is created, stepped and
closed on one dedicated thread (real envs such as pseudo-terminals or browsers are
thread-affine), so a slow step never blocks the event loop or the other sessions.
All methods run on the server's event loop.

HTTP sessions (``POST /sessions``) outlive their requests, so they are limited twice: all
of them together take at most ``max_http_sessions`` slots (by default half, so WebSocket
clients always find room), and one client (its address) holds at most
``max_http_per_client`` of them. A few ``POST /sessions`` from one client thus cannot lock
every other client out for the idle timeout. WebSocket sessions are limited per client too
(``max_ws_per_client``, by default half the slots), and the connection of one idle for
``idle_timeout_s`` is closed (see :mod:`.ws`), which closes its session: idle ``/ws``
connections of one client cannot lock the others out either.
"""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

from agentworld.sim.openenv.envs import ServedEnv

T = TypeVar("T")


class SessionKind(Enum):
    WEBSOCKET = "websocket"
    HTTP = "http"  # opened by POST /sessions, addressed by session_id
    ONE_SHOT = "one-shot"  # the fresh env of one stateless HTTP request


class SessionLimitError(RuntimeError):
    """All ``max_sessions`` slots are taken (HTTP 503)."""


class ClientLimitError(SessionLimitError):
    """This client holds as many HTTP (or WebSocket) sessions as one client may, or HTTP
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
    client: str | None = None  # the client's address (HTTP and WebSocket sessions)
    last_active_s: float = field(default_factory=time.monotonic)

    async def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)`` on this session's thread."""
        self.last_active_s = time.monotonic()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self.executor, functools.partial(function, *args, **kwargs)
        )


class SessionManager:
    """Opens, finds and closes sessions, at most ``max_sessions`` at a time.

    Args:
        factory: Makes the env of a new session (called on the session's thread).
        max_sessions: Most sessions open at once (all kinds together).
        idle_timeout_s: HTTP sessions idle this long (seconds) are closed when a slot is
            needed, WebSocket connections idle this long are closed by :mod:`.ws`; ``None``
            keeps them until ``DELETE /sessions/{id}`` or the client closes.
        max_http_sessions: Most HTTP sessions at once (default ``max(1, max_sessions // 2)``).
        max_http_per_client: Most HTTP sessions of one client at once (default
            ``max(1, max_http_sessions // 2)``).
        max_ws_per_client: Most WebSocket sessions of one client at once (default
            ``max(1, max_sessions // 2)``).

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
        if max_ws_per_client is None:
            max_ws_per_client = max(1, max_sessions // 2)
        if max_http_sessions is None:
            max_http_sessions = max(1, max_sessions // 2)
        if max_http_per_client is None:
            max_http_per_client = max(1, max_http_sessions // 2)
        for name, value in (
            ("max_sessions", max_sessions),
            ("max_http_sessions", max_http_sessions),
            ("max_http_per_client", max_http_per_client),
            ("max_ws_per_client", max_ws_per_client),
        ):
            if value < 1:
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
        """A new session with a freshly made env; ``client`` (an address) is counted
        against the per-client limit of its kind (HTTP or WebSocket sessions).

        Raises:
            ClientLimitError: An HTTP session over ``max_http_per_client`` for ``client``
                or over ``max_http_sessions`` in all, or a WebSocket session over
                ``max_ws_per_client`` for ``client``.
            SessionLimitError: ``max_sessions`` sessions are open.
            Exception: Whatever the factory raised (the slot is released).
        """
        if kind is SessionKind.HTTP:
            if self._count(kind, client) >= self.max_http_per_client:
                await self._close_idle()
            if self._count(kind, client) >= self.max_http_per_client:
                raise ClientLimitError(
                    f"client {client} already holds {self.max_http_per_client} HTTP sessions "
                    "(--max-sessions-per-client); delete one (DELETE /sessions/ID) or use /ws"
                )
            if self.count(SessionKind.HTTP) >= self.max_http_sessions:
                await self._close_idle()
            if self.count(SessionKind.HTTP) >= self.max_http_sessions:
                raise ClientLimitError(
                    f"all {self.max_http_sessions} HTTP session slots are in use; the "
                    "remaining slots are kept for WebSocket sessions (/ws); retry later"
                )
        if len(self._sessions) >= self.max_sessions:
            await self._close_idle()
        if len(self._sessions) >= self.max_sessions:
            raise SessionLimitError(
                f"server at capacity: {len(self._sessions)} of {self.max_sessions} sessions "
                "in use (--max-sessions); close a session or retry later"
            )
        if kind is SessionKind.WEBSOCKET and self._count(kind, client) >= self.max_ws_per_client:
            raise ClientLimitError(
                f"client {client} already holds {self.max_ws_per_client} WebSocket sessions "
                "(--max-ws-per-client); close one first"
            )
        session = Session(
            uuid.uuid4().hex, kind, ThreadPoolExecutor(1, "openenv-session"), client=client
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

    def _count(self, kind: SessionKind, client: str | None) -> int:
        return sum(s.kind is kind and s.client == client for s in self._sessions.values())

    async def _close_idle(self) -> None:
        if self.idle_timeout_s is None:
            return
        now = time.monotonic()
        for session in list(self._sessions.values()):
            if (
                session.kind is SessionKind.HTTP
                and now - session.last_active_s > self.idle_timeout_s
            ):
                await self.close(session.id)
