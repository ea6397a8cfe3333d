"""Request-size limit: an ASGI middleware answering 413 to HTTP bodies over ``max_bytes``.

Used by both servers (``serve-openai`` and ``serve``): a body too large is refused before
it is read (declared ``Content-Length``) or as soon as the bytes received pass the limit
(streamed bodies), so one huge request neither blocks the event loop while it is parsed nor
grows the server's memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse

Scope = dict[str, Any]


def detail_body(message: str) -> dict[str, Any]:
    """FastAPI's error body: ``{"detail": message}``."""
    return {"detail": message}


class BodyLimitMiddleware:
    """Rejects HTTP requests whose body exceeds ``max_bytes`` with status 413.

    A declared ``Content-Length`` over the limit (or not a number) is refused before the
    body is read; a body streamed without one is counted as it arrives and cut off at the
    limit by raising :class:`starlette.exceptions.HTTPException` (413) from ``receive``,
    which the app's HTTP exception handler turns into its own error body. WebSocket
    messages are left to the app.

    Args:
        app: The wrapped ASGI app.
        max_bytes: Largest accepted body (bytes), ``> 0``.
        error_body: Makes the JSON body of the 413 refusal from its message (default
            ``{"detail": message}``; the OpenAI server gives ``{"error": {...}}``).

    Raises:
        ValueError: ``max_bytes < 1``.
    """

    def __init__(
        self,
        app: Any,
        max_bytes: int,
        error_body: Callable[[str], dict[str, Any]] = detail_body,
    ):
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
        self.app, self.max_bytes, self.error_body = app, max_bytes, error_body

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            what = f"Content-Length {declared.decode(errors='replace')}"
            await self._refuse(scope, receive, send, what)
            return
        received = 0

        async def limited_receive() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(413, self.detail(f"body of over {received} bytes"))
            return message

        await self.app(scope, limited_receive, send)

    def detail(self, what: str) -> str:
        """The refusal message for ``what`` (names the limit, in bytes)."""
        return f"request too large: {what} exceeds the limit of {self.max_bytes} bytes"

    async def _refuse(self, scope: Scope, receive: Any, send: Any, what: str) -> None:
        body = self.error_body(self.detail(what))
        refusal = JSONResponse(body, 413, headers={"connection": "close"})
        await refusal(scope, receive, send)
