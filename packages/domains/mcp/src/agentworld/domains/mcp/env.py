"""``McpEnv``: a real stdio MCP server as a Gymnasium 1.x environment.

Each episode starts a fresh server process with a private state directory
(:func:`state_dir`), removed on ``close``; the server dies with the driver (the kernel's
parent-death signal, :mod:`agentworld.domains.mcp.client`), and the state directories a killed
driver left are removed by the next process's first episode. The observation after a tool call
is the tool's raw response text (structured results as their JSON text); tool errors keep their
text. The state behind it, for collection and checks only, is :meth:`McpEnv.privileged_state`.
"""

from __future__ import annotations

import functools
import os
import shutil
import string
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
from agentworld.core.gymvec import FreeText
from agentworld.core.owned_dirs import owned_prefix, sweep_dead
from agentworld.core.types import Action, ObservationText, Task
from agentworld.domains.mcp import catalog, checks
from agentworld.domains.mcp.calls import definitions, listing, parse_call
from agentworld.domains.mcp.client import ServerConnection, ServerError
from agentworld.domains.mcp.prompt import ROLE
from agentworld.domains.mcp.prompt import system_prompt as prompt_for
from agentworld.domains.mcp.registration import register_envs
from agentworld.domains.mcp.tasks import McpTaskSampler

MAX_TEXT = 65536
DEFAULT_SERVER = "notes"


STATE_PREFIX = "agentworld-mcp-"


@functools.cache
def _swept(parent: str, pid: int) -> list[str]:
    return sweep_dead(parent, STATE_PREFIX)


def state_dir() -> Path:
    """A new private directory (``mkdtemp``, mode 0700) for an episode's server state:
    ``agentworld-mcp-<pid>-<start time>-<random>`` under the system temporary directory. The
    first call of a process removes the ones whose owner process is gone (a driver killed with
    SIGKILL cannot remove its own; :func:`agentworld.core.owned_dirs.sweep_dead`)."""
    parent = tempfile.gettempdir()
    _swept(parent, os.getpid())
    return Path(tempfile.mkdtemp(prefix=owned_prefix(STATE_PREFIX), dir=parent))


class McpEnv(gym.Env[str, str]):
    """A stdio MCP server, one fresh process and state directory per episode.

    Spaces: ``spaces.Text`` up to :data:`MAX_TEXT` printable characters for actions (a JSON
    tool call) and observations (responses may hold other Unicode characters, returned as they
    are). ``step`` takes an :class:`~agentworld.core.types.Action` or its text.

    Args:
        server: One of our servers (``notes``, ``records``, ``todo``) or a command line of any
            stdio MCP server (``"/venv/bin/mcp-server-time"``), which this process then trusts
            (:func:`agentworld.domains.mcp.catalog.trust`); ``None``: the task's
            ``setup["server"]`` when it is one of ours or a trusted one (a task is data: any
            other is refused at ``reset``), else ``notes``.
        tasks: A task sampler; ``reset`` without a task draws one with a seed from
            ``np_random`` (as ``gymnasium.make("agentworld/mcp-v0")`` does).
        timeout_s: Seconds the server may take to answer one call; past it the server is
            restarted (``info["restarted"]``). Start-up may take at least
            :data:`~agentworld.domains.mcp.client.START_TIMEOUT_S`.
        max_steps: Steps after which ``step`` reports ``truncated``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, server: str | None = None, tasks: Any = None, timeout_s: float = 10.0,
                 max_steps: int = 50) -> None:
        if server is not None and not server.strip():
            raise ValueError("server must be None, notes, records, todo or a command line, got ''")
        if server is not None:
            catalog.trust(server)  # the operator's own configuration
        self.server, self.tasks, self.timeout_s, self.max_steps = server, tasks, timeout_s, max_steps
        text = FreeText(MAX_TEXT, min_length=0, charset=string.printable)
        self.action_space, self.observation_space = text, text
        self.task: Task | None = None
        self.root: Path | None = None
        self.tools: list[dict[str, Any]] = []
        self.startup_s = 0.0
        self._server_name = DEFAULT_SERVER
        self._conn: ServerConnection | None = None
        self._steps = 0
        self._last = ""
        self._listing = ""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[ObservationText, dict[str, Any]]:
        """Start the server (``options={"task": Task}``: the task's server and set-up calls).

        Returns the tool listing (:func:`~agentworld.domains.mcp.calls.listing`) and
        ``info = {"server", "task_id", "instruction", "startup_s"}``.

        Raises:
            ServerError: the server does not start within ``timeout_s``.
            UntrustedServerError: the task names a server that is neither ours nor trusted.
            RuntimeError: a set-up call of the task fails (the message names it).
        """
        super().reset(seed=seed)
        self.close()
        task = (options or {}).get("task")
        if task is not None and not isinstance(task, Task):
            task = Task.model_validate(task)
        if task is None and self.tasks is not None:
            task = self.tasks.sample(1, seed=int(self.np_random.integers(2**31)))[0]
        self.task = task
        setup = task.setup if task else {}
        self._server_name = self.server or setup.get("server") or DEFAULT_SERVER
        self.root = state_dir()
        try:
            self._start()
            for call in setup.get("calls", []) if self.server is None else []:
                result = self._conn.call(call["name"], call.get("arguments", {}))  # type: ignore[union-attr]
                if result.is_error:
                    raise RuntimeError(f"set-up call {call} of task "
                                       f"{task.id if task else '?'} failed: {result.text}")
        except BaseException:
            self.close()
            raise
        self._steps, self._last = 0, ""
        self._listing = listing(catalog.label(self._server_name), self.tools)
        info = {"server": self._server_name, "task_id": task.id if task else None,
                "instruction": task.instruction if task else None, "startup_s": self.startup_s}
        return ObservationText(self._listing), info

    def step(self, action: Action | str) -> tuple[ObservationText, float, bool, bool, dict[str, Any]]:
        """Call the tool. Returns ``(response text, reward, terminated, truncated, info)``:
        reward 1.0 and ``terminated`` once the task's check holds; ``info`` has ``tool``,
        ``is_error`` (a tool error, a malformed call or a server failure), ``restarted`` and
        ``success``. A malformed call gets a one-line tool error; a server that dies or hangs
        is restarted (its state directory kept) and the step's text says so.

        Raises:
            RuntimeError: ``reset`` was not called.
            TypeError: ``action`` is neither an ``Action`` nor a ``str``.
        """
        if self._conn is None:
            raise RuntimeError("call reset() before step()")
        if not isinstance(action, Action | str):
            raise TypeError(f"action must be an Action or str, got {type(action).__name__}")
        self._steps += 1
        parsed = parse_call(action)
        restarted = False
        if isinstance(parsed, str):
            tool, text, is_error = None, parsed, True
        else:
            tool = parsed[0]
            try:
                result = self._conn.call(*parsed)
                text, is_error = result.text, result.is_error
            except ServerError as exc:
                text, is_error, restarted = f"Error: {exc}; the server was restarted", True, True
                self._conn.close(graceful=False)
                self._start()
        self._last = text
        success = bool(self.task and checks.holds(self.task.check, self._data(), text))
        info = {"tool": tool, "is_error": is_error, "restarted": restarted, "success": success}
        return (ObservationText(text), 1.0 if success else 0.0, success,
                self._steps >= self.max_steps, info)

    def system_prompt(self, task: Task | None) -> str:
        """The world-model system prompt of this episode: the role and the tools the running
        server listed (a third-party ``server`` has its own, whatever the task names); with our
        servers, the task's set-up calls too (:mod:`agentworld.domains.mcp.prompt`)."""
        if self.server is None:
            return prompt_for(task)
        return "\n\n".join([ROLE.format(name=f" named {catalog.label(self._server_name)!r}"),
                             f"Available tools:\n{definitions(list(self.tools))}"])

    def privileged_state(self) -> dict[str, Any] | None:
        """``{"server": name, "data": state}`` with ``data`` read now from our server's state
        directory (``{"notes": [...]}``, ``{"tables": {...}}``, ``{"todos": [...]}``; ``None``
        for a third-party server). Before the first step it also holds ``listing``, the tool
        listing of the reset observation, so that rationales of recorded episodes check calls
        without starting a server (:meth:`McpDomain.explain`). ``None`` before ``reset``."""
        if self.root is None:
            return None
        state = {"server": self._server_name, "data": self._data()}
        return state | {"listing": self._listing} if self._steps == 0 else state

    def server_pid(self) -> int | None:
        """The running server's process id (``None`` when none runs)."""
        return self._conn.pid() if self._conn is not None else None

    def close(self) -> None:
        """Kill the server and delete the episode's state directory. Idempotent."""
        try:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                conn.close()
        finally:
            if self.root is not None:
                root, self.root = self.root, None
                shutil.rmtree(root, ignore_errors=True)

    def _start(self) -> None:
        assert self.root is not None
        argv = catalog.command(self._server_name, self.root / "data")
        started = time.perf_counter()
        self._conn = ServerConnection(argv, self.root, self.timeout_s)
        self.tools = self._conn.start()
        self.startup_s = time.perf_counter() - started

    def _data(self) -> dict[str, Any] | None:
        if self.root is None:
            return None
        return catalog.dump(self._server_name, self.root / "data")


    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def make_env(**kwargs: Any) -> McpEnv:
    """The entry point of ``agentworld/mcp-v0``: an :class:`McpEnv` drawing tasks from
    :class:`~agentworld.domains.mcp.tasks.McpTaskSampler` unless ``tasks`` is given
    (``tasks=None`` turns it off)."""
    kwargs.setdefault("tasks", McpTaskSampler())
    return McpEnv(**kwargs)


register_envs()
