"""uvicorn settings of both servers against slow clients (slowloris).

uvicorn (0.54) has no timeout on receiving a request: its keep-alive timer only runs between
requests and stops at the first byte received, and nothing runs on a connection that was just
opened (uvicorn issue #157, ``--timeout-request-start``, is still open). A client that opens
connections and sends a request line a byte at a time, or nothing at all, holds them forever.
:func:`uvicorn_options` gives the servers:

- ``http``: uvicorn's own h11 protocol with a deadline: a connection must deliver the request
  line and headers of each request within ``header_timeout_s`` (seconds) of being opened, or
  of the previous response; otherwise it is closed. The deadline stops once the headers are in
  (a slow handler, a WebSocket upgrade and the WebSocket session itself are not timed by it).
- ``timeout_keep_alive``: an idle keep-alive connection is closed after :data:`KEEP_ALIVE_S`.
- ``h11_max_incomplete_event_size``: a request line plus headers over :data:`MAX_HEADER_BYTES`
  is refused with 400 before more is buffered.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

logger = logging.getLogger(__name__)

HEADER_TIMEOUT_S = 10.0
"""Time a client has to send a request's line and headers (seconds)."""
KEEP_ALIVE_S = 5
"""Idle time after which a keep-alive connection is closed (seconds)."""
MAX_HEADER_BYTES = 16 * 1024
"""Largest request line plus headers (bytes)."""


def header_deadline_protocol(header_timeout_s: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request headers take longer than
    ``header_timeout_s`` seconds (counted from the connection's opening or from the previous
    response's end).

    Raises:
        ValueError: ``header_timeout_s <= 0``.
    """
    if not header_timeout_s > 0:
        raise ValueError(f"header_timeout_s must be > 0 seconds, got {header_timeout_s}")

    class HeaderDeadlineProtocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._follow_request()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._follow_request()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._follow_request()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_deadline()
            super().connection_lost(exc)

        def _follow_request(self) -> None:
            """Run the deadline while the next request's headers are awaited (h11 ``IDLE``)."""
            waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
            if waiting and self._deadline is None:
                self._deadline = self.loop.call_later(header_timeout_s, self._expire)
            elif not waiting:
                self._stop_deadline()

        def _stop_deadline(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                logger.info(
                    "closing %s: no complete request headers within %g s",
                    self.client,
                    header_timeout_s,
                )
                self.transport.close()

    return HeaderDeadlineProtocol


def uvicorn_options(header_timeout_s: float = HEADER_TIMEOUT_S) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.run`` / ``uvicorn.Config`` against slow clients (see the
    module docstring); ``header_timeout_s`` in seconds.

    Raises:
        ValueError: ``header_timeout_s <= 0``.
    """
    return {
        "http": header_deadline_protocol(header_timeout_s),
        "timeout_keep_alive": KEEP_ALIVE_S,
        "h11_max_incomplete_event_size": MAX_HEADER_BYTES,
    }
