"""API keys for both servers: bearer-token checks and the rule for binding beyond loopback.

The rule (both ``agentworld serve`` and ``agentworld serve-openai``): a server bound to a
loopback address needs no key; one bound to any other address (``0.0.0.0``, a LAN
address, a host name other than ``localhost``) is refused unless it has an API key
(``AGENTWORLD_API_KEY``, ``--api-key-file PATH`` or ``--api-key``), or the user passes
``--no-auth`` to accept an open server, which is then logged as a warning. ``serve --real``
gives every client a shell, so an open server on a network is never the silent default.

A key given as ``--api-key KEY`` is visible to every local user in the process list
(``ps``, ``/proc/PID/cmdline``), so the commands warn about it; the environment variable or
a key file readable by its owner alone (:func:`read_api_key_file`) keep it private.

Clients send the key as ``Authorization: Bearer KEY`` (RFC 6750), on HTTP requests and on
the WebSocket handshake alike; keys are compared in constant time. A browser cannot set
headers on a WebSocket, so :class:`BearerAuthMiddleware` can also take the key from a query
parameter of the handshake (``/ws?token=KEY``, as Jupyter does).

``agentworld serve`` requires a key even on loopback: without one given it makes a fresh one
(:func:`new_token`) and prints it once; ``--no-token`` serves it open.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
import stat
from collections.abc import Collection
from typing import Any
from urllib.parse import parse_qs

from starlette.responses import JSONResponse

logger = logging.getLogger(__name__)

API_KEY_ENV = "AGENTWORLD_API_KEY"
COMMAND_LINE_KEY_WARNING = (
    "warning: --api-key is visible to every local user in the process list (ps); "
    f"pass the key in {API_KEY_ENV} or in --api-key-file PATH (mode 600) instead"
)


def read_api_key_file(path: str | os.PathLike[str]) -> str:
    """The API key stored in ``path``: its text with surrounding whitespace stripped.

    Raises:
        ValueError: ``path`` cannot be read, group or others may read or write it (its mode
            has bits in ``0o077``; ``chmod 600 PATH`` fixes it), or it holds no key. One line,
            naming the file.
    """
    try:
        with open(path, encoding="utf-8") as file:
            mode = os.fstat(file.fileno()).st_mode
            if mode & 0o077:
                raise ValueError(
                    f"the API key file {os.fspath(path)!r} is open to group or others (mode "
                    f"{stat.S_IMODE(mode):03o}); run chmod 600 on it so only its owner can read it"
                )
            key = file.read().strip()
    except OSError as error:
        raise ValueError(
            f"the API key file {os.fspath(path)!r} cannot be read: {error.strerror}"
        ) from None
    if not key or any(c.isspace() for c in key):
        raise ValueError(
            f"the API key file {os.fspath(path)!r} must hold one key (no spaces), got "
            f"{'nothing' if not key else 'several words'}"
        )
    return key


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` only accepts connections from this machine
    (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # another host name: it may resolve to any interface


def check_exposure(host: str, api_key: str | None, *, no_auth: bool = False) -> None:
    """Enforce the binding rule of this module before a server starts.

    Raises:
        ValueError: ``host`` is not loopback, there is no ``api_key`` and ``no_auth`` is
            false; the message says how to set a key.
    """
    if api_key or is_loopback(host):
        return
    if not no_auth:
        raise ValueError(
            f"refusing to serve on {host!r} without an API key: any machine that reaches it "
            f"could use it. Set the {API_KEY_ENV} environment variable (or --api-key-file PATH), "
            "bind --host 127.0.0.1, or pass --no-auth to serve it open"
        )
    logger.warning(
        "serving on %s with no API key (--no-auth): anyone who reaches it may use it", host
    )


def bearer_matches(headers: Any, api_key: str) -> bool:
    """Whether ``headers`` (a mapping or ASGI ``[(name, value)]`` bytes pairs) carry
    ``Authorization: Bearer <api_key>``."""
    if isinstance(headers, list | tuple):
        raw = dict(headers).get(b"authorization", b"").decode("latin-1")
    else:
        raw = headers.get("authorization", "")
    scheme, _, token = raw.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return secrets.compare_digest(token.strip().encode(), api_key.encode())


UNAUTHORIZED = "missing or incorrect API key (send 'Authorization: Bearer KEY')"


def new_token() -> str:
    """A fresh random serving token: 32 bytes from :mod:`secrets`, URL-safe base64 (43
    characters), fit for a header and a query parameter alike."""
    return secrets.token_urlsafe(32)


def query_matches(query_string: bytes, name: str, api_key: str) -> bool:
    """Whether the raw query string ``query_string`` has ``name=<api_key>`` (compared in
    constant time)."""
    values = parse_qs(query_string.decode("latin-1")).get(name) or []
    return any(secrets.compare_digest(v.encode(), api_key.encode()) for v in values)


class BearerAuthMiddleware:
    """Refuses requests without the API key: HTTP with 401 ``{"detail": ...}`` (and
    ``WWW-Authenticate: Bearer``), a WebSocket handshake with close code 1008 before it is
    accepted (the client sees HTTP 403). Paths in ``open_paths`` (``/health``) stay open.

    Args:
        app: The wrapped ASGI app.
        api_key: The key clients must send.
        open_paths: Exact paths served without a key.
        websocket_query: When set, a WebSocket handshake may carry the key as this query
            parameter instead of the header (``/ws?token=KEY``: browsers cannot set headers
            on a WebSocket). HTTP requests always need the header.
    """

    def __init__(
        self,
        app: Any,
        api_key: str,
        open_paths: Collection[str] = ("/health",),
        websocket_query: str | None = None,
    ):
        if not api_key:
            raise ValueError("api_key must be a non-empty string")
        self.app, self.api_key, self.open_paths = app, api_key, frozenset(open_paths)
        self.websocket_query = websocket_query

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope["type"]
        if (
            kind not in ("http", "websocket")
            or scope.get("path") in self.open_paths
            or bearer_matches(scope.get("headers") or [], self.api_key)
            or (
                kind == "websocket"
                and self.websocket_query is not None
                and query_matches(
                    scope.get("query_string", b""), self.websocket_query, self.api_key
                )
            )
        ):
            await self.app(scope, receive, send)
            return
        if kind == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "unauthorized"})
            return
        refusal = JSONResponse(
            {"detail": UNAUTHORIZED}, 401, headers={"www-authenticate": "Bearer"}
        )
        await refusal(scope, receive, send)
