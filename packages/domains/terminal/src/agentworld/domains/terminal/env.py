"""``TerminalEnv``: the real terminal environment (Gymnasium call order).

Each episode gets a fresh temporary root directory, populated from the
task's set-up data and mounted as ``/home/agent`` in a new sandboxed bash.
Observations are what the terminal shows after a command: its output, then
the prompt line (see :mod:`agentworld.domains.terminal.prompt`).
``Observation.state`` is ``{"cwd", "exit_code", "files"}`` where ``files``
is :func:`agentworld.domains.terminal.fs.snapshot` of the root.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from agentworld.core.types import Action, Observation, Task
from agentworld.domains.terminal.fs import (
    apply_setup,
    check_success,
    freeze_times,
    remove_tree,
    snapshot,
)
from agentworld.domains.terminal.limits import Limits
from agentworld.domains.terminal.roots import default_root_parent, listing_order
from agentworld.domains.terminal.shell import CommandResult, Shell


class TerminalEnv:
    """Real bash in a sandbox, one fresh root directory per episode.

    Args:
        limits: Resource and time limits (:class:`~agentworld.domains.terminal.sandbox.Limits`).
        max_steps: Steps after which ``step`` reports ``truncated=True``.
        sandbox: Sandbox kind to use (default: the detected one).
        root_parent: Directory under which episode roots are created
            (default: :func:`~agentworld.domains.terminal.roots.default_root_parent`, the
            system temporary directory unless ``$AGENTWORLD_TERMINAL_ROOT`` is set; on tmpfs
            set-up directories list in name order for ``find``; it must be traversable by
            other users when running as root).

    Raises:
        RuntimeError: (from ``reset``) no sandbox works on this machine.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        max_steps: int = 50,
        sandbox: str | None = None,
        root_parent: str | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.max_steps = max_steps
        self.sandbox = sandbox
        self.root_parent = root_parent
        self.root: Path | None = None
        self.task: Task | None = None
        self._shell: Shell | None = None
        self._steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Start an episode; ``options={"task": Task}`` sets up the task's files.

        ``seed`` is accepted for the Gymnasium API; the environment itself is
        deterministic. Returns the initial observation (the prompt line) and
        ``info = {"root": host path of the episode root, "sandbox": kind}``.

        Raises:
            RuntimeError: no sandbox works here, or the shell does not start.
            ValueError: the task's set-up data names a path outside the root.
        """
        self.close()
        task = (options or {}).get("task")
        if task is not None and not isinstance(task, Task):
            task = Task.model_validate(task)
        self.task = task
        parent = self.root_parent or default_root_parent() or tempfile.gettempdir()
        self.root = Path(tempfile.mkdtemp(prefix="agentworld-ep-", dir=parent))
        self.root.chmod(0o755)
        if task is not None:
            apply_setup(self.root, task.setup, listing_order(parent))
        self._shell = Shell(self.root, self.limits, self.sandbox)
        self._steps = 0
        result = self._shell.start()
        return self._observation(result), {"root": str(self.root), "sandbox": self._shell.kind}

    def step(self, action: Action) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Type ``action.text`` at the prompt and return what the terminal shows.

        Returns ``(observation, reward, terminated, truncated, info)``:
        reward 1.0 and ``terminated`` when the task's check passes after this
        step; ``truncated`` once ``max_steps`` steps were taken; ``info`` has
        ``exit_code``, ``timed_out``, ``restarted``, ``output_truncated`` and
        ``success``.

        Raises:
            RuntimeError: ``reset`` was not called.
        """
        if self._shell is None or self.root is None:
            raise RuntimeError("call reset() before step()")
        result = self._shell.run(action.text)
        freeze_times(self.root)
        self._steps += 1
        obs = self._observation(result)
        success = bool(
            self.task and check_success(self.root, self.task.check, result.output, result.cwd)
        )
        info = {
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "restarted": result.restarted,
            "output_truncated": result.truncated,
            "success": success,
        }
        return obs, 1.0 if success else 0.0, success, self._steps >= self.max_steps, info

    def close(self) -> None:
        """Stop the shell and delete the episode root. Idempotent."""
        if self._shell is not None:
            self._shell.close()
            self._shell = None
        if self.root is not None:
            remove_tree(self.root)
            self.root = None

    def _observation(self, result: CommandResult) -> Observation:
        assert self.root is not None
        state = {"cwd": result.cwd, "exit_code": result.exit_code, "files": snapshot(self.root)}
        return Observation(text=result.text, state=state)

    def __enter__(self) -> TerminalEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
