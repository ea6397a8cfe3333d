"""Request-size limit: an ASGI middleware answering 413 to HTTP bodies over ``max_bytes``."""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException

Scope = dict[str, Any]


class BodyLimitMiddleware:
    """Rejects HTTP requests whose body exceeds ``max_bytes`` with ``413 {"detail": ...}``.

    A declared ``Content-Length`` over the limit is refused before the body is read; a body
    streamed without one is counted as it arrives and cut off at the limit. WebSocket
    messages are limited by the app itself (see ``app.py``).

    Args:
        app: The wrapped ASGI app.
        max_bytes: Largest accepted body (bytes).
    """

    def __init__(self, app: Any, max_bytes: int):
        assert max_bytes > 0
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send, f"Content-Length {declared.decode(errors='replace')}")
            return
        received = 0

        async def limited_receive() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # fastapi's HTTPException: FastAPI re-raises it from body parsing as is
                    raise HTTPException(413, self._detail(f"body of over {received} bytes"))
            return message

        await self.app(scope, limited_receive, send)

    def _detail(self, what: str) -> str:
        return f"request too large: {what} exceeds the limit of {self.max_bytes} bytes"

    async def _refuse(self, send: Any, what: str) -> None:
        body = json.dumps({"detail": self._detail(what)}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
