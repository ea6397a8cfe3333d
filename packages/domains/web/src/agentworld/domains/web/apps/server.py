"""The local server of the web apps: one uvicorn server on 127.0.0.1 (a free port), in a thread.

The apps are virtual hosts of one Starlette app (``shop.test``, ``forum.test``,
``todo.test`` and the MiniWoB++ pages on ``miniwob.test``, :data:`HOSTS`); the browser resolves those names to this server
(Chromium's ``--host-resolver-rules``), so pages show real, stable URLs whatever the port.
State lives in :attr:`AppServer.world`, replaced at each episode's reset.

Every request must carry the episode's key in the :data:`KEY_HEADER` header (random, 256 bits,
drawn again at each reset; the episode's browser context sends it with every request,
:meth:`AppServer.headers`); any other gets 403 and never reaches an app, so another local user
(or a stale context) cannot read or change a live episode's world on the loopback port.
WebSocket connections are refused.
"""

from __future__ import annotations

import hmac
import secrets
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Host, Router

from agentworld.domains.web.apps import forum, miniwob, shop, todo
from agentworld.domains.web.apps.world import World

HOSTS = {"shop.test": shop, "forum.test": forum, "todo.test": todo, "miniwob.test": miniwob}
"""App host name -> module (each with ``routes(world_of)``)."""
KEY_HEADER = "x-agentworld-episode"


class _EpisodeKey:
    """ASGI middleware: only requests carrying ``key_of()`` in :data:`KEY_HEADER` pass."""

    def __init__(self, app: Any, key_of: Callable[[], str]) -> None:
        self.app, self.key_of = app, key_of

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] == "http":
            sent = dict(scope["headers"]).get(KEY_HEADER.encode(), b"")
            if not hmac.compare_digest(sent, self.key_of().encode()):
                deny = PlainTextResponse("forbidden: not this episode's browser", 403)
                await deny(scope, receive, send)
                return
        await self.app(scope, receive, send)


class AppServer:
    """The apps served on ``127.0.0.1:port`` until :meth:`close`.

    Raises:
        RuntimeError: the server did not start within 10 s.
    """

    def __init__(self, seed: int = 0) -> None:
        self.world = World.build(seed)
        self.key = secrets.token_urlsafe(32)
        hosts = [Host(name, Router(module.routes(lambda: self.world)))
                 for name, module in HOSTS.items()]
        app = Starlette(routes=hosts)
        app.add_route("/{path:path}", lambda request: PlainTextResponse("unknown host", 404))
        self._serve(app, "web-apps")

    def _serve(self, app: Any, name: str) -> None:
        """Serve ``app`` behind the episode key on a free loopback port, in a thread."""
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        guarded = _EpisodeKey(app, lambda: self.key)
        config = uvicorn.Config(guarded, log_level="error", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # not the main thread's business
        self._thread = threading.Thread(target=self._server.run,
                                        kwargs={"sockets": [self._socket]}, daemon=True,
                                        name=f"{name}-{self.port}")
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                self.close()
                raise RuntimeError(f"the {name} server on 127.0.0.1:{self.port} did not start")
            time.sleep(0.005)

    def reset(self, seed: int) -> World:
        """A fresh world of ``seed`` and a new key (the previous episode's state is dropped
        and its key refused)."""
        self.world = World.build(seed)
        self.key = secrets.token_urlsafe(32)
        return self.world

    def headers(self) -> dict[str, str]:
        """The header every request of this episode's browser must send."""
        return {KEY_HEADER: self.key}

    def resolver_rules(self) -> str:
        """Chromium's ``--host-resolver-rules`` value: each app host to this server, every
        other name unresolvable."""
        maps = [f"MAP {host} 127.0.0.1:{self.port}" for host in HOSTS]
        return ", ".join([*maps, "MAP * ~NOTFOUND"])

    def close(self) -> None:
        """Stop the server and its thread (idempotent)."""
        self._server.should_exit = True
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._socket.close()
