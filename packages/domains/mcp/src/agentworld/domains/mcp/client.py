"""A blocking client of one stdio MCP server: the official SDK's ``stdio_client`` and
``ClientSession`` in a background thread with its own event loop.

The server is started through a tiny launcher (:data:`LAUNCHER`) that sets its parent-death
signal (``prctl(PR_SET_PDEATHSIG, SIGKILL)``) and then ``exec``s the server command: the SDK
spawns the process itself (no ``preexec_fn`` hook), and the signal survives ``exec``, so the
server dies with the thread that spawned it, also when this process is killed with SIGKILL.
The launcher writes the server's pid to a file, so :meth:`ServerConnection.close` can kill the
server's process group even when the SDK could not.

Results are read in their JSON wire form (``model_dump(by_alias=True)``: ``isError``,
``inputSchema``), which SDK 1.x and 2.x share.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import signal
import sys
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

try:  # SDK 2.x renamed McpError to MCPError (migration guide)
    from mcp import MCPError as RpcError  # type: ignore[attr-defined]
except ImportError:  # SDK 1.x
    from mcp import McpError as RpcError

#: Sets PR_SET_PDEATHSIG (1) to SIGKILL, exits if the parent is already gone, writes its pid to
#: argv[2] and execs argv[3:].
LAUNCHER = (
    "import ctypes,os,signal,sys\n"
    "ctypes.CDLL(None).prctl(1,signal.SIGKILL)\n"
    "if os.getppid()!=int(sys.argv[1]): os._exit(1)\n"
    "open(sys.argv[2],'w').write(str(os.getpid()))\n"
    "os.execvp(sys.argv[3],sys.argv[3:])\n"
)


def _wire(result: Any) -> dict[str, Any]:
    """An SDK result model in its JSON wire form."""
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


class ServerError(RuntimeError):
    """The server did not start, died, or did not answer in time."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One ``tools/call`` answer.

    Attributes:
        text: The raw response text: the text content items joined by newlines (other items as
            their JSON), or the structured content as JSON when there is no content.
        is_error: The result's ``isError`` flag (a tool error), or true for a JSON-RPC error.
        raw: The result in its JSON wire form (``{}`` for a JSON-RPC error).
    """

    text: str
    is_error: bool
    raw: dict[str, Any]


def result_text(raw: dict[str, Any]) -> str:
    """The response text of a ``CallToolResult`` in wire form (see :class:`ToolResult`)."""
    parts = [item["text"] if item.get("type") == "text" else json.dumps(item, sort_keys=True)
             for item in raw.get("content") or []]
    if not parts and raw.get("structuredContent") is not None:
        return json.dumps(raw["structuredContent"], indent=2)
    return "\n".join(parts)


START_TIMEOUT_S = 20.0
"""Least seconds a server may take to start (see :class:`ServerConnection`)."""


class ServerConnection:
    """One running server. Not thread-safe: one caller at a time.

    Args:
        command: The server's argv (``command[0]`` looked up on ``PATH``).
        workdir: A private directory: the server's working directory; holds its stderr log
            (``stderr.log``) and pid file.
        timeout_s: Seconds a call may take before :class:`ServerError`.
        env: Extra environment variables for the server.
        start_timeout_s: Seconds a start-up (process start, ``initialize``, ``list_tools``) may
            take; default the larger of ``timeout_s`` and :data:`START_TIMEOUT_S`, as a Python
            server importing the SDK on a loaded host takes seconds to start.
    """

    def __init__(self, command: list[str], workdir: Path, timeout_s: float = 10.0,
                 env: dict[str, str] | None = None, start_timeout_s: float | None = None):
        if not command:
            raise ValueError("server command is empty; give e.g. 'python -m my_server'")
        self.command, self.workdir, self.timeout_s = list(command), Path(workdir), timeout_s
        self.start_timeout_s = max(timeout_s, START_TIMEOUT_S) if start_timeout_s is None \
            else start_timeout_s
        self.env = env
        self.tools: list[dict[str, Any]] = []
        #: What the server listed at start besides tools (wire form; empty when it offers none).
        self.resources: list[dict[str, Any]] = []
        self.prompts: list[dict[str, Any]] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="mcp-client")
        self._task: asyncio.Task[None] | None = None
        self._queue: asyncio.Queue[Any] | None = None
        self._pidfile = self.workdir / f"server-{uuid.uuid4().hex[:12]}.pid"  # one per start
        self._errlog = open(self.workdir / "stderr.log", "a")  # noqa: SIM115 - closed in close()

    def start(self) -> list[dict[str, Any]]:
        """Start the server, initialise the session and list its tools (wire form:
        ``name``, ``description``, ``inputSchema``, ...).

        Raises:
            ServerError: the server exited or did not initialise within ``start_timeout_s``.
        """
        self._thread.start()
        ready: concurrent.futures.Future[list[dict[str, Any]]] = concurrent.futures.Future()

        def begin() -> None:
            self._queue = asyncio.Queue()
            self._task = self._loop.create_task(self._serve(ready))

        self._loop.call_soon_threadsafe(begin)
        try:
            self.tools = ready.result(self.start_timeout_s)
        except concurrent.futures.TimeoutError:
            self.close()
            raise ServerError(f"server {self.command[0]!r} did not initialise within "
                              f"{self.start_timeout_s:g} s") from None
        except BaseException as exc:
            tail = self._stderr_tail()
            self.close()
            raise ServerError(f"server {' '.join(self.command)!r} failed to start: "
                              f"{exc!r}{tail}") from None
        return self.tools

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call tool ``name``. A tool error is a result (``is_error``), so is a JSON-RPC error
        (its message as the text).

        Raises:
            ServerError: the server died or did not answer within ``timeout_s``.
        """
        if self._queue is None or self._task is None or self._task.done():
            raise ServerError("the server is not running")
        fut: concurrent.futures.Future[ToolResult] = concurrent.futures.Future()
        queue = self._queue
        self._loop.call_soon_threadsafe(queue.put_nowait, (name, arguments, fut))
        try:
            return fut.result(self.timeout_s)
        except concurrent.futures.TimeoutError:
            raise ServerError(f"tool {name!r} did not answer within {self.timeout_s:g} s") from None

    def pid(self) -> int | None:
        """The server's process id (from the launcher's pid file), ``None`` before it ran."""
        try:
            return int(self._pidfile.read_text())
        except (OSError, ValueError):
            return None

    def close(self, graceful: bool = True) -> None:
        """Stop the session (``graceful``: close its stdin and give it 2 s to exit first; else
        kill it at once, for a hung server) and kill the server's process group; stop the
        thread. Idempotent."""
        if not graceful:
            self._kill()
        if self._thread.is_alive():
            if self._task is not None and self._queue is not None:
                queue, task = self._queue, self._task
                self._loop.call_soon_threadsafe(queue.put_nowait, None)
                done = asyncio.run_coroutine_threadsafe(asyncio.wait({task}, timeout=2.0),
                                                        self._loop)
                with contextlib.suppress(Exception):
                    done.result(3.0)
                if not task.done():
                    self._loop.call_soon_threadsafe(task.cancel)
            self._kill()
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5.0)
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.close()
        if not self._errlog.closed:
            self._errlog.close()

    def _kill(self) -> None:
        pid = self.pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)  # start_new_session: pgid == pid

    async def _serve(self, ready: concurrent.futures.Future[list[dict[str, Any]]]) -> None:
        launcher = [sys.executable, "-c", LAUNCHER, str(os.getpid()), str(self._pidfile)]
        argv = [*launcher, *self.command]
        params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(self.workdir),
                                       env=self.env)
        assert self._queue is not None
        pending: concurrent.futures.Future[ToolResult] | None = None
        try:
            async with stdio_client(params, errlog=self._errlog) as (read, write), \
                    ClientSession(read, write) as session:
                init = await session.initialize()
                listed = await session.list_tools()
                await self._list_extras(session, init.capabilities)
                ready.set_result(listed.model_dump(mode="json", by_alias=True,
                                                   exclude_none=True)["tools"])
                while (item := await self._queue.get()) is not None:
                    name, arguments, pending = item
                    pending.set_result(await self._call(session, name, arguments))
                    pending = None
        except BaseException as exc:  # noqa: BLE001 - reported to whoever waits
            leaf = exc
            while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
                leaf = leaf.exceptions[0]
            error = leaf if isinstance(leaf, ServerError) else ServerError(f"server stopped: {leaf!r}")
            for fut in (ready, pending):
                if fut is not None and not fut.done():
                    fut.set_exception(error)
            if not isinstance(exc, Exception):
                raise

    async def _list_extras(self, session: ClientSession, capabilities: Any) -> None:
        """Fill :attr:`resources` and :attr:`prompts` when the server offers them (a JSON-RPC
        error leaves them empty)."""
        if capabilities.resources:
            with contextlib.suppress(RpcError):
                self.resources = _wire(await session.list_resources()).get("resources") or []
        if capabilities.prompts:
            with contextlib.suppress(RpcError):
                self.prompts = _wire(await session.list_prompts()).get("prompts") or []

    @staticmethod
    async def _call(session: ClientSession, name: str, arguments: dict[str, Any]) -> ToolResult:
        try:
            result = await session.call_tool(name, arguments)
        except RpcError as exc:  # a JSON-RPC error answer
            if str(exc) == "Connection closed":  # the server's stdout closed: it died
                raise ServerError("the server closed the connection (it exited)") from None
            return ToolResult(text=str(exc), is_error=True, raw={})
        raw = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return ToolResult(text=result_text(raw), is_error=bool(raw.get("isError")), raw=raw)

    def _stderr_tail(self) -> str:
        if not self._errlog.closed:
            self._errlog.flush()
        tail = (self.workdir / "stderr.log").read_text(errors="replace")[-600:].strip()
        return f"; its stderr ends: {tail}" if tail else ""
