"""Sessions of the OpenEnv server: one env each, run on its own worker thread.

Every session (a WebSocket connection, an HTTP session, or the fresh env of a stateless
HTTP request) takes one of ``max_sessions`` slots. A session's env is created, stepped and
closed on one dedicated thread (real envs such as pseudo-terminals or browsers are
thread-affine), so a slow step never blocks the event loop or the other sessions.
All methods run on the server's event loop.
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
    """All ``max_sessions`` slots are taken."""


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
            needed; ``None`` keeps them until ``DELETE /sessions/{id}``.

    Raises:
        ValueError: ``max_sessions < 1``.
    """

    def __init__(
        self,
        factory: Callable[[], ServedEnv],
        max_sessions: int,
        idle_timeout_s: float | None = 600.0,
    ):
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {max_sessions}")
        self.factory, self.max_sessions, self.idle_timeout_s = factory, max_sessions, idle_timeout_s
        self._sessions: dict[str, Session] = {}

    @property
    def num_sessions(self) -> int:
        return len(self._sessions)

    def count(self, kind: SessionKind) -> int:
        return sum(s.kind is kind for s in self._sessions.values())

    async def open(self, kind: SessionKind) -> Session:
        """A new session with a freshly made env.

        Raises:
            SessionLimitError: ``max_sessions`` sessions are open.
            Exception: Whatever the factory raised (the slot is released).
        """
        if len(self._sessions) >= self.max_sessions:
            await self._close_idle()
        if len(self._sessions) >= self.max_sessions:
            raise SessionLimitError(
                f"server at capacity: {len(self._sessions)} of {self.max_sessions} sessions "
                "in use (--max-sessions); close a session or retry later"
            )
        session = Session(uuid.uuid4().hex, kind, ThreadPoolExecutor(1, "openenv-session"))
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
