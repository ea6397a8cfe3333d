"""Browser guard: an ASGI middleware that keeps web pages of other sites off a local server.

A browser lets any page it shows send requests to ``127.0.0.1``: "simple" cross-site requests
(a form ``POST`` with ``text/plain``, a ``fetch`` in ``no-cors`` mode) go out without asking
the server first, and a WebSocket handshake goes out whatever the server's CORS policy. Three
checks close that door (the serving tokens of :mod:`.auth` are the fourth):

- **Origin.** A request (HTTP or WebSocket handshake) carrying an ``Origin`` header is served
  only when that origin is the server's own (``http://HOST:PORT`` of the address the
  connection came in on; ``localhost``, ``127.0.0.1`` and ``[::1]`` too when that address is
  loopback) or listed in ``allowed_origins``. No ``Origin`` (curl, Python clients, the
  OpenEnv and MCP SDKs) is served. Refused: HTTP 403 ``{"detail": ...}``; a WebSocket
  handshake is closed before it is accepted (the client sees HTTP 403).
- **Host** (DNS rebinding). On a loopback connection the ``Host`` header must name a loopback
  host (``localhost``, ``127.0.0.0/8``, ``::1``) or a host of an allowed origin: a page whose
  name was re-pointed at ``127.0.0.1`` sends its own name and is refused (403).
- **JSON only.** Every ``POST``, ``PUT`` and ``PATCH`` needs ``Content-Type:
  application/json`` (parameters such as ``charset`` allowed): anything else, or none, gets
  415. A ``Content-Type: application/json`` request from another site needs a CORS preflight,
  which this server never grants.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from starlette.responses import JSONResponse

JSON_METHODS = frozenset({"POST", "PUT", "PATCH"})
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def normalize_origin(origin: str) -> str:
    """``scheme://host[:port]`` of ``origin``, lower-cased, default ports (80, 443) dropped.

    Raises:
        ValueError: ``origin`` is not ``http(s)://host[:port]`` (a path, a query or ``null``
            are refused); the message names it.
    """
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise ValueError(f"an origin is http(s)://HOST[:PORT], got {origin!r}")
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}[parts.scheme]
    return f"{parts.scheme}://{host}" + ("" if port in (None, default) else f":{port}")


def _is_loopback_host(host: str) -> bool:
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(host_header: str) -> str:
    """The host of a ``Host`` header (``name``, ``name:port``, ``[v6]:port``)."""
    host_header = host_header.strip()
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")] if "]" in host_header else host_header
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


class BrowserGuardMiddleware:
    """Refuses cross-site browser requests (see the module docstring for the rules).

    Args:
        app: The wrapped ASGI app.
        allowed_origins: Further origins (``http(s)://host[:port]``) whose pages may use the
            server, e.g. a notebook front end on another port.

    Raises:
        ValueError: An entry of ``allowed_origins`` is not an origin (see
            :func:`normalize_origin`).
    """

    def __init__(self, app: Any, allowed_origins: Iterable[str] = ()):
        self.app = app
        self.allowed = frozenset(normalize_origin(o) for o in allowed_origins)
        self.allowed_hosts = frozenset(
            _host_name(urlsplit(o).netloc).lower() for o in self.allowed
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        raw = scope.get("headers") or []
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}
        problem = self.origin_problem(scope, headers)
        status = 403
        if problem is None and kind == "http" and scope.get("method") in JSON_METHODS:
            problem, status = _content_type_problem(scope["method"], headers), 415
        if problem is None:
            await self.app(scope, receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": problem[:120]})
        else:
            await JSONResponse({"detail": problem}, status)(scope, receive, send)

    def own_origins(self, scope: dict[str, Any]) -> set[str]:
        """The origins of the address this connection came in on (``scope["server"]``)."""
        server = scope.get("server")
        if not server or server[1] is None:
            return set()
        host, port = str(server[0]), int(server[1])
        secure = scope.get("scheme") in ("https", "wss")
        scheme = "https" if secure else "http"
        names = {f"[{host}]" if ":" in host else host}
        if _is_loopback_host(host):
            names.update(LOOPBACK_NAMES)
        return {normalize_origin(f"{scheme}://{name}:{port}") for name in names}

    def origin_problem(self, scope: dict[str, Any], headers: dict[str, str]) -> str | None:
        """Why this request's ``Origin`` or ``Host`` is refused, or ``None``."""
        server = scope.get("server")
        host = headers.get("host")
        if server and _is_loopback_host(str(server[0])) and host is not None:
            name = _host_name(host)
            if not _is_loopback_host(name) and name.lower() not in self.allowed_hosts:
                return (
                    f"Host {host!r} is not a loopback name: this server answers "
                    "localhost, 127.0.0.1 and [::1] only (DNS rebinding guard)"
                )
        origin = headers.get("origin")
        if origin is None:
            return None
        try:
            normalized = normalize_origin(origin)
        except ValueError:
            normalized = None
        if normalized is not None and (
            normalized in self.allowed or normalized in self.own_origins(scope)
        ):
            return None
        return (
            f"cross-origin request from {origin!r} refused: only this server's own origin "
            "and --allow-origin origins are served"
        )


def _content_type_problem(method: str, headers: dict[str, str]) -> str | None:
    raw = headers.get("content-type")
    media = (raw or "").split(";", 1)[0].strip().lower()
    if media == "application/json":
        return None
    got = "no Content-Type" if raw is None else f"Content-Type {raw!r}"
    return f"{method} needs Content-Type: application/json (send the body as JSON), got {got}"
