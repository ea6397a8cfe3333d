"""``TerminalEnv``: the real terminal environment, a Gymnasium 1.x ``Env``.

Each episode gets a fresh temporary root directory, populated from the
task's set-up data and mounted as ``/home/agent`` in a new sandboxed bash.
Observations are what the terminal shows after a command: its output, then
the prompt line (see :mod:`agentworld.domains.terminal.prompt`).

What the agent gets (observation, ``info``) holds nothing it could not see on the screen: the
observation is an :class:`~agentworld.core.types.ObservationText` (a ``str``) whose ``state``
is ``{"cwd", "exit_code"}``. Privileged state, for collection and scoring only, comes from
:meth:`TerminalEnv.privileged_state`: the same plus ``files``, the
:func:`agentworld.domains.terminal.fs.snapshot` of the root. The host path of the root is
never reported.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
from agentworld.core.gymvec import FreeText
from agentworld.core.textenv import action_text
from agentworld.core.types import Action, ObservationText, Task
from agentworld.domains.terminal.episode_root import EpisodeRoot, episode_task
from agentworld.domains.terminal.fs import (
    check_success,
    freeze_times,
    snapshot,
)
from agentworld.domains.terminal.limits import Limits
from agentworld.domains.terminal.shell import CommandResult, Shell
from agentworld.domains.terminal.state_text import HOME_STATE_CHARS
from agentworld.domains.terminal.user_home import read_home, with_home

# One command line: printable ASCII without line breaks or tabs (a line break would type two
# commands; the terminal's line limit is 4,095 bytes).
ACTION_CHARSET = string.ascii_letters + string.digits + string.punctuation + " "
ACTION_MAX_LENGTH = 4095
OBSERVATION_CHARSET = string.printable  # output is UTF-8 text: other characters may occur
OBSERVATION_MAX_LENGTH = 16384  # output (4,096 bytes by default) + notes + prompt line


class TerminalEnv(gym.Env[str, str]):
    """Real bash in a sandbox, one fresh root directory per episode (``gymnasium.Env``).

    Spaces: ``action_space`` is ``spaces.Text`` of one command line (:data:`ACTION_CHARSET`,
    up to :data:`ACTION_MAX_LENGTH` characters); ``observation_space`` is ``spaces.Text`` up
    to :data:`OBSERVATION_MAX_LENGTH` characters of :data:`OBSERVATION_CHARSET` (a command may
    print other Unicode characters, which are returned as they are). ``step`` takes a ``str``
    or an :class:`~agentworld.core.types.Action`.

    Args:
        limits: Resource and time limits (:class:`~agentworld.domains.terminal.limits.Limits`).
        max_steps: Steps after which ``step`` reports ``truncated=True``.
        sandbox: Sandbox kind to use (default: the detected one).
        root_parent: Directory under which episode roots are created
            (default: :func:`~agentworld.domains.terminal.roots.default_root_parent`, the
            system temporary directory unless ``$AGENTWORLD_TERMINAL_ROOT`` is set; on tmpfs
            set-up directories list in name order for ``find``; it must be traversable by
            other users when running as root).
        tasks: A task sampler (``sample(n, seed=...)``); when given, ``reset`` without a task
            draws one with a seed from the environment's generator (so ``reset(seed=s)`` picks
            the same task for the same ``s``), as ``gymnasium.make("agentworld/terminal-v0")``
            does. Without it, such a reset starts an empty home directory with no reward.
        render_mode: ``None`` or ``"ansi"`` (``render()`` returns the transcript).
        home: A folder of the user's copied into every episode's home, with the task's own
            files (:mod:`agentworld.domains.terminal.user_home`: no link followed, bounded).
        home_state_chars: Characters of the world model's description of that home
            (:func:`~agentworld.domains.terminal.user_home.with_home`).
        ro_binds: ``(host directory, path under /opt)`` pairs bound read-only in every
            episode's sandbox (:func:`~agentworld.domains.terminal.layout.plan`), given by the
            host's code (never by task data): the swe domain's per-repository environment.

    Raises:
        ValueError: ``home`` is not a folder, holds nothing, or is too large; (from ``reset``)
            a ``ro_binds`` path inside that is not under ``/opt``.
        RuntimeError: (from ``reset``) no sandbox works on this machine.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        limits: Limits | None = None,
        max_steps: int = 50,
        sandbox: str | None = None,
        root_parent: str | None = None,
        tasks: Any = None,
        render_mode: str | None = None,
        home: str | Path | None = None,
        home_state_chars: int = HOME_STATE_CHARS,
        ro_binds: tuple[tuple[str, str], ...] = (),
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.home = read_home(Path(home))[0] if home is not None else None
        self.home_state_chars = home_state_chars
        self.ro_binds = tuple(ro_binds)
        self.limits = limits or Limits()
        self.max_steps = max_steps
        self.sandbox = sandbox
        self.root_parent = root_parent
        self.tasks = tasks
        self.render_mode = render_mode
        self.action_space = FreeText(ACTION_MAX_LENGTH, min_length=0, charset=ACTION_CHARSET)
        self.observation_space = FreeText(
            OBSERVATION_MAX_LENGTH, min_length=0, charset=OBSERVATION_CHARSET
        )
        self.root: Path | None = None
        self.task: Task | None = None
        self._shell: Shell | None = None
        self._steps = 0
        self._last: CommandResult | None = None
        self._transcript: list[str] = []
        self._root: EpisodeRoot | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObservationText, dict[str, Any]]:
        """Start an episode; ``options={"task": Task}`` (or its dict) sets up the task's files.

        ``seed`` seeds the environment's generator (``np_random``), which draws the task when
        the environment has a sampler and no task is given; the terminal itself is
        deterministic. Returns the initial observation (the prompt line) and
        ``info = {"sandbox": kind, "task_id", "instruction"}`` (``None`` without a task).

        Raises:
            RuntimeError: no sandbox works here, or the shell does not start.
            UnboundedSandboxError: the episode's disk or memory cannot be bounded here and the
                user did not accept that (:mod:`agentworld.domains.terminal.disk`).
            ValueError: the task is not valid: its set-up or check data is malformed or names
                a path outside the home directory (the message names the field,
                :mod:`agentworld.domains.terminal.task_data`).
        """
        super().reset(seed=seed)
        self.close()
        task = episode_task(options, self.tasks, self.np_random)
        if self.home is not None:
            task = with_home(task or Task(id="home", domain="terminal", instruction=""),
                             self.home, self.home_state_chars)
        self.task = task
        self._root = EpisodeRoot.make("agentworld-ep-", self.root_parent, self.limits, task)
        self.root = self._root.path
        try:
            self._shell = Shell(self.root, self.limits, self.sandbox, self.ro_binds)
            self._steps = 0
            result = self._shell.start()
        except BaseException:
            self.close()  # no root is left behind
            raise
        observation = self._observation(result)
        self._transcript = [observation.text]
        info = {
            "sandbox": self._shell.kind,
            "task_id": task.id if task else None,
            "instruction": task.instruction if task else None,
        }
        return observation, info

    def step(
        self, action: Action | str
    ) -> tuple[ObservationText, float, bool, bool, dict[str, Any]]:
        """Type the action (a ``str`` or ``Action.text``) at the prompt and return what the
        terminal shows.

        Returns ``(observation, reward, terminated, truncated, info)``:
        reward 1.0 and ``terminated`` when the task's check passes after this
        step (:func:`agentworld.domains.terminal.fs.check_success`); ``truncated`` once
        ``max_steps`` steps were taken; ``info`` has ``exit_code``, ``timed_out``,
        ``restarted``, ``output_truncated`` and ``success``.

        Raises:
            RuntimeError: ``reset`` was not called.
            TypeError: ``action`` is neither a ``str`` nor an ``Action``.
        """
        if self._shell is None or self.root is None:
            raise RuntimeError("call reset() before step()")
        text = action_text(action)
        result = self._shell.run(text)
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
        self._transcript += [f">>> {text}", obs.text]
        return obs, 1.0 if success else 0.0, success, self._steps >= self.max_steps, info

    def run(self, command: str, timeout_s: float | None = None) -> CommandResult:
        """Run ``command`` in the episode's shell as :meth:`step` does, without counting a step,
        checking the task or recording it in the transcript: for environments built on this
        one (the swe domain's tools run through it). ``timeout_s``: seconds (default
        ``limits.command_timeout_s``).

        Raises:
            RuntimeError: ``reset`` was not called.
            ValueError: ``command`` holds a NUL character or is not valid Unicode text.
        """
        if self._shell is None or self.root is None:
            raise RuntimeError("call reset() before run()")
        result = self._shell.run(command, timeout_s)
        self._last = result
        return result

    def privileged_state(self) -> dict[str, Any] | None:
        """The state behind the last observation, for collection and scoring only (never
        shown to the agent): ``{"cwd", "exit_code", "files"}`` with ``files`` the bounded
        :func:`~agentworld.domains.terminal.fs.snapshot` of the episode root, taken now.
        ``None`` before ``reset``."""
        if self.root is None or self._last is None:
            return None
        return {
            "cwd": self._last.cwd,
            "exit_code": self._last.exit_code,
            "files": snapshot(self.root),
        }

    def render(self) -> str | None:
        """With ``render_mode="ansi"``: the episode's transcript (observations, and each
        action after ``>>> ``); else ``None``."""
        if self.render_mode != "ansi":
            return None
        return "\n".join(self._transcript) + "\n"

    def close(self) -> None:
        """Stop the shell and delete the episode root. Idempotent."""
        try:
            if self._shell is not None:
                shell, self._shell = self._shell, None
                shell.close()
        finally:
            if self._root is not None:
                root, self._root, self.root = self._root, None, None
                root.close()
            self._last = None

    def _observation(self, result: CommandResult) -> ObservationText:
        self._last = result
        return ObservationText(
            result.text, state={"cwd": result.cwd, "exit_code": result.exit_code}
        )

    def __enter__(self) -> TerminalEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
