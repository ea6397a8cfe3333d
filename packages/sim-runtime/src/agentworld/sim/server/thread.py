"""Running an ASGI server in a background thread: for tests, notebooks, an in-process judge."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from agentworld.sim.server.chat import ChatModel
from agentworld.sim.server.openai_server import create_app
from agentworld.sim.server.slow_clients import HEADER_TIMEOUT_S, uvicorn_options


class ServerThread:
    """A uvicorn server for ``app`` running in a background thread (for tests, notebooks).

    Binds ``host:port`` before starting (``port=0``: a free port, read back from
    :attr:`port`), so there is no race on the port. Use as a context manager,
    or call :meth:`start` and :meth:`stop`.

    Args:
        app: An ASGI application.
        host: Interface to bind; keep the loopback default unless remote clients must connect.
        port: TCP port; ``0`` picks a free one.
        header_timeout_s: A connection whose request line and headers take longer (seconds)
            is closed (see :mod:`agentworld.sim.server.slow_clients`).
    """

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        header_timeout_s: float = HEADER_TIMEOUT_S,
    ):
        self.host, self.app = host, app
        self._socket = socket.create_server((host, port))
        self.port: int = self._socket.getsockname()[1]
        # lifespan "on": the app's start-up and shut-down hooks run (the OpenEnv app closes
        # its sessions' envs when the server stops)
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", **uvicorn_options(header_timeout_s)
        )
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """``http://host:port/v1``, the ``base_url`` an OpenAI client takes."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self, timeout_s: float = 30.0) -> ServerThread:
        """Start serving; returns once the server accepts connections.

        Raises:
            RuntimeError: The server did not start within ``timeout_s`` seconds.
        """
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server on {self.host}:{self.port} did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask the server to exit and wait for its thread."""
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        self._socket.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def serve_in_thread(
    chat_model: ChatModel,
    model_name: str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    **options: Any,
) -> Iterator[ServerThread]:
    """Serve ``chat_model`` in a background thread for the ``with`` block; yields the server.

    ``options`` go to :func:`create_app` (``max_batch``, ``max_wait_s``, ``max_n``).
    """
    with ServerThread(create_app(chat_model, model_name, **options), host, port) as server:
        yield server
