"""``AgentWorldToolEnv``: one agentworld environment driven through TRL tool calls.

The base class of the per-domain classes built by
:func:`agentworld.trainers.agents.trl_env.tool_env_class` (see that module for how TRL uses it).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from agentworld.core.protocols import Environment
from agentworld.core.types import Action, Observation, Task

OBSERVATION_SEPARATOR = "\n\n"


class AgentWorldToolEnv:
    """One agentworld :class:`~agentworld.core.protocols.Environment` seen by TRL as tools.

    Build concrete classes with :func:`tool_env_class` (which adds the domain's tool method)
    and instances through :func:`environment_factory`. The wrapped environment may be real
    (``domain.make_env()``) or simulated (``agentworld.sim.SimEnv``): actions go in as
    :class:`~agentworld.core.types.Action` (or as plain text when the environment declares a
    Gymnasium ``Text`` action space), observations come back as text.

    Every public function of this class is a TRL tool, so all helpers are private or
    properties. Episode state: :attr:`episode_return` (sum of step rewards),
    :attr:`num_steps`, :attr:`done`, :attr:`end_reason`, :attr:`actions`,
    :attr:`observations`, :attr:`last_info`.

    Args:
        env: The environment to drive.
        max_steps: Tool calls per episode after which the episode is truncated (``None``:
            only the environment's own limit).

    Raises:
        ValueError: ``max_steps`` is not positive.
    """

    domain_name: ClassVar[str] = ""
    tool_name: ClassVar[str] = ""

    def __init__(self, env: Environment, *, max_steps: int | None = None) -> None:
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"max_steps must be a positive number of steps, got {max_steps}")
        self._env = env
        self._max_steps = max_steps
        self._text_actions = _declares_text_actions(env)
        self._task: Task | None = None
        self._return = 0.0
        self._actions: list[str] = []
        self._observations: list[str] = []
        self._info: dict[str, Any] = {}
        self._end: str | None = None
        self._started = False

    def reset(self, **row: Any) -> str:
        """Start an episode for one dataset row; TRL calls this before each rollout.

        Args:
            **row: The dataset row. ``task`` (a :class:`~agentworld.core.types.Task`, its
                dict, or its JSON text, as written by :func:`task_rows`) sets the episode's
                task; ``seed`` (int) is passed to the environment's ``reset``; other
                columns (``prompt``, ...) are ignored.

        Returns:
            ``"\\n\\n"`` followed by the initial observation text; TRL appends it to the last
            user message of the prompt.

        Raises:
            ValueError: ``task`` is not a valid task.
        """
        self._task = _as_task(row.get("task"))
        options = {"task": self._task} if self._task is not None else None
        observation, info = self._env.reset(seed=row.get("seed"), options=options)
        text = _text(observation)
        self._return, self._end, self._started = 0.0, None, True
        self._actions, self._observations, self._info = [], [text], dict(info)
        return OBSERVATION_SEPARATOR + text

    @property
    def env(self) -> Environment:
        """The wrapped environment (close it with ``tool_env.env.close()``)."""
        return self._env

    @property
    def task(self) -> Task | None:
        """The task of the current episode."""
        return self._task

    @property
    def episode_return(self) -> float:
        """Undiscounted sum of the rewards of this episode's steps (0.0 before any step)."""
        return self._return

    @property
    def num_steps(self) -> int:
        """Environment steps taken in this episode (tool calls after the end do not count)."""
        return len(self._actions)

    @property
    def done(self) -> bool:
        """Whether the episode ended (terminated or truncated)."""
        return self._end is not None

    @property
    def end_reason(self) -> str | None:
        """``"terminated"``, ``"truncated"``, ``"truncated: <reason>"`` or ``None`` while running."""
        return self._end

    @property
    def actions(self) -> list[str]:
        """Action texts sent to the environment this episode, in order."""
        return list(self._actions)

    @property
    def observations(self) -> list[str]:
        """Observation texts of this episode: the initial one, then one per step."""
        return list(self._observations)

    @property
    def last_info(self) -> dict[str, Any]:
        """The ``info`` dict of the last ``reset``/``step`` (``raw``/``parsed`` for ``SimEnv``)."""
        return self._info

    def _act(self, text: str) -> str:
        """Step the environment with one action text; the tool methods call this.

        Returns the observation text, followed by ``[episode ended: REASON]`` on the step
        that ends the episode; after the end, a message saying so (no step is taken).

        Raises:
            RuntimeError: ``reset`` was never called.
            Exception: whatever the environment's ``step`` raises, unchanged; TRL's tool loop
                turns it into an ``{"error": ...}`` tool message and counts it in
                ``tools/failure_frequency`` (``GRPOTrainer._tool_call_loop``), so a
                training run goes on.
        """
        if not self._started:
            raise RuntimeError("call reset() before calling a tool")
        if self._end is not None:
            return f"The episode has already ended ({self._end}); no action was taken."
        action: Any = text if self._text_actions else Action(text=text)
        observation, reward, terminated, truncated, info = self._env.step(action)
        obs_text = _text(observation)
        self._return += float(reward)
        self._actions.append(text)
        self._observations.append(obs_text)
        self._info = dict(info)
        if self._max_steps is not None and len(self._actions) >= self._max_steps:
            truncated = True
            self._info.setdefault("truncated_reason", "max_steps")
        if terminated:
            self._end = "terminated"
        elif truncated:
            reason = self._info.get("truncated_reason")
            self._end = f"truncated: {reason}" if reason else "truncated"
        if self._end is None:
            return obs_text
        return f"{obs_text}\n[episode ended: {self._end}]"


def _declares_text_actions(env: Any) -> bool:
    """Whether ``env`` declares a Gymnasium ``Text`` action space (``SimEnv``): it takes strings."""
    space = getattr(env, "action_space", None)
    return space is not None and type(space).__name__ == "Text"


def _text(observation: Any) -> str:
    return observation.text if isinstance(observation, Observation) else str(observation)


def _as_task(value: Any) -> Task | None:
    if value is None or isinstance(value, Task):
        return value
    try:
        if isinstance(value, str):
            return Task.model_validate(json.loads(value))
        return Task.model_validate(value)
    except ValueError as exc:
        raise ValueError(f"row column 'task' is not a valid Task (dict or JSON): {exc}") from exc
