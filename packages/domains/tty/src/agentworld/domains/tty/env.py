"""``TtyEnv``: the interactive terminal, a Gymnasium 1.x ``Env`` (keystrokes in, screen out).

Each episode gets a fresh root directory with the task's files (the terminal domain's
:func:`~agentworld.domains.terminal.fs.apply_setup`, on its own bounded file system where the
machine allows it), mounted as ``/home/agent`` in the terminal domain's sandbox, where an
interactive bash runs on a 24 x 80 pty (:class:`~agentworld.domains.tty.terminal.Tty`).

An action is AgentWorldBench's keystroke list (:mod:`agentworld.domains.tty.keys`); the
observation is the visible screen (:mod:`agentworld.domains.tty.screen`), an
:class:`~agentworld.core.types.ObservationText` whose ``state`` is ``{"cursor": [row, col]}``.
A malformed action changes nothing: the observation is the environment's error line, a blank
line and the unchanged screen. Privileged state (collection and scoring only):
:meth:`TtyEnv.privileged_state` adds the foreground ``program``, whether the ``alternate``
screen is up, and the ``files`` snapshot of the root.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
from agentworld.core.textenv import action_text
from agentworld.core.types import Action, ObservationText, Task
from agentworld.domains.terminal.episode_root import EpisodeRoot, episode_task
from agentworld.domains.terminal.fs import (
    check_success,
    freeze_times,
    snapshot,
)
from agentworld.domains.terminal.limits import Limits
from agentworld.domains.terminal.prompt import HOME
from agentworld.domains.tty.keys import ActionError, parse_action
from agentworld.domains.tty.screen import COLUMNS, ROWS
from agentworld.domains.tty.terminal import Tty
from gymnasium import spaces

ACTION_MAX_LENGTH = 70_000  # 16 items of 4,096 characters and their JSON
OBSERVATION_MAX_LENGTH = (COLUMNS + 1) * ROWS * 4 + 1024  # the screen (UTF-8) and an error line


def error_observation(message: str, screen: str) -> str:
    """The observation after a malformed action: ``ERROR: message``, a blank line, the screen."""
    return f"ERROR: {message}\n\n{screen}"


class TtyEnv(gym.Env[str, str]):
    """Keystrokes into a sandboxed interactive bash, the screen out (``gymnasium.Env``).

    Args:
        limits: Resource limits of the sandbox (the terminal domain's ``Limits``).
        max_steps: Steps after which ``step`` reports ``truncated=True``.
        sandbox: Sandbox kind (default: the detected one).
        root_parent: Directory under which episode roots are made (default: as the terminal
            domain, ``$AGENTWORLD_TERMINAL_ROOT`` or the temporary directory).
        tasks: A task sampler; ``reset`` without a task draws one with a seed from the
            environment's generator (``gymnasium.make("agentworld/tty-v0")`` does so).

    Raises:
        RuntimeError: (from ``reset``) no sandbox works here, or the shell does not start.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "render_fps": 4}

    def __init__(self, limits: Limits | None = None, max_steps: int = 30,
                 sandbox: str | None = None, root_parent: str | None = None,
                 tasks: Any = None) -> None:  # fmt: skip
        self.limits = limits or Limits()
        self.max_steps, self.sandbox, self.root_parent, self.tasks = (
            max_steps, sandbox, root_parent, tasks)  # fmt: skip
        self.action_space = spaces.Text(ACTION_MAX_LENGTH, min_length=0, charset=string.printable)
        self.observation_space = spaces.Text(OBSERVATION_MAX_LENGTH, min_length=0,
                                             charset=string.printable)  # fmt: skip
        self.root: Path | None = None
        self.task: Task | None = None
        self._tty: Tty | None = None
        self._root: EpisodeRoot | None = None
        self._steps = 0
        self._screen = ""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[ObservationText, dict[str, Any]]:  # fmt: skip
        """Start an episode; ``options={"task": Task}`` (or its dict) sets up its files.

        Returns the first screen (the prompt) and ``info = {"sandbox", "task_id",
        "instruction"}``.

        Raises:
            RuntimeError: no sandbox works here, or the shell does not start.
            UnboundedSandboxError: the disk or memory cannot be bounded here and the user did
                not accept that (``AGENTWORLD_TERMINAL_UNBOUNDED``).
            ValueError: the task's set-up or check data is malformed (the field is named).
        """
        super().reset(seed=seed)
        self.close()
        self.task = task = episode_task(options, self.tasks, self.np_random)
        self._root = EpisodeRoot.make("agentworld-tty-", self.root_parent, self.limits, task)
        self.root = self._root.path
        try:
            self._tty = Tty(self.root, self.limits, self.sandbox)
            self._steps = 0
            self._screen = self._tty.start()
        except BaseException:
            self.close()  # no root and no process is left behind
            raise
        info = {"sandbox": self._tty.kind, "task_id": task.id if task else None,
                "instruction": task.instruction if task else None}  # fmt: skip
        return self._observation(self._screen), info

    def step(self, action: Action | str) -> tuple[ObservationText, float, bool, bool, dict[str, Any]]:
        """Type the action's keystrokes and return the screen.

        Returns ``(observation, reward, terminated, truncated, info)``: reward 1.0 and
        ``terminated`` once the task's check holds (its ``output_*`` conditions read the
        screen); ``info`` has ``error`` (the malformed action's message, else ``None``),
        ``restarted`` (the shell exited and a new one started), ``seconds`` and ``success``.

        Raises:
            RuntimeError: ``reset`` was not called.
            TypeError: ``action`` is neither a ``str`` nor an ``Action``.
        """
        if self._tty is None or self.root is None:
            raise RuntimeError("call reset() before step()")
        text = action_text(action)
        self._steps += 1
        info: dict[str, Any] = {"error": None, "restarted": False, "seconds": 0.0}
        try:
            items = parse_action(text)
        except ActionError as exc:
            info["error"] = str(exc)
            observation = self._observation(error_observation(str(exc), self._screen))
        else:
            typed = self._tty.type(items)
            freeze_times(self.root)
            self._screen = typed.screen
            info["restarted"], info["seconds"] = typed.restarted, typed.seconds
            observation = self._observation(self._screen)
        success = bool(self.task and self.task.check
                       and check_success(self.root, self.task.check, self._screen, HOME))
        info["success"] = success
        return observation, float(success), success, self._steps >= self.max_steps, info

    def privileged_state(self) -> dict[str, Any] | None:
        """``{"cursor", "program", "alternate", "files"}`` now (collection and scoring only;
        never shown to the agent); ``None`` before ``reset``."""
        if self._tty is None or self.root is None:
            return None
        screen = self._tty.screen
        return {"cursor": [screen.cursor.y, screen.cursor.x], "program": self._tty.foreground(),
                "alternate": screen.alternate, "files": snapshot(self.root)}  # fmt: skip

    def close(self) -> None:
        """Kill the sandbox (every process in it) and delete the episode root. Idempotent."""
        try:
            if self._tty is not None:
                tty, self._tty = self._tty, None
                tty.close()
        finally:
            if self._root is not None:
                root, self._root, self.root = self._root, None, None
                root.close()

    def _observation(self, text: str) -> ObservationText:
        cursor = self._tty.screen.cursor if self._tty is not None else None
        state = {"cursor": [cursor.y, cursor.x]} if cursor is not None else {}
        return ObservationText(text, state=state)

    def __enter__(self) -> TtyEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
