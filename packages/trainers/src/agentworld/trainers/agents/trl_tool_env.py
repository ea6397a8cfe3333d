"""``AgentWorldToolEnv``: one agentworld environment driven through TRL tool calls.

The base class of the per-domain classes built by
:func:`agentworld.trainers.agents.trl_env.tool_env_class` (see that module for how TRL uses it).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from agentworld.core.protocols import Environment
from agentworld.core.rollout import (
    Outcome,
    RolloutEpisode,
    start_episode,
    step_episode,
    text_of,
)
from agentworld.core.types import Action, Task

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
        self._episode: RolloutEpisode | None = None
        self._info: dict[str, Any] = {}

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
        task = _as_task(row.get("task"))
        self._episode = start_episode(self._env, task=task, seed=row.get("seed"))
        self._info = dict(self._episode.reset_info)
        return OBSERVATION_SEPARATOR + text_of(self._episode.initial_observation)

    @property
    def env(self) -> Environment:
        """The wrapped environment (close it with ``tool_env.env.close()``)."""
        return self._env

    @property
    def task(self) -> Task | None:
        """The task of the current episode."""
        return None if self._episode is None else self._episode.task

    @property
    def episode_return(self) -> float:
        """Undiscounted sum of the rewards of this episode's steps (0.0 before any step)."""
        return 0.0 if self._episode is None else self._episode.episode_return

    @property
    def num_steps(self) -> int:
        """Environment steps taken in this episode (tool calls after the end do not count)."""
        return 0 if self._episode is None else self._episode.num_steps

    @property
    def done(self) -> bool:
        """Whether the episode ended (terminated or truncated)."""
        return self.end_reason is not None

    @property
    def end_reason(self) -> str | None:
        """``"terminated"``, ``"truncated"``, ``"truncated: <reason>"`` or ``None`` while running."""
        episode = self._episode
        if episode is None or not episode.done:
            return None
        if episode.outcome is Outcome.TERMINATED:
            return "terminated"
        reason = self._info.get("truncated_reason")
        return f"truncated: {reason}" if reason else "truncated"

    @property
    def actions(self) -> list[str]:
        """Action texts sent to the environment this episode, in order."""
        if self._episode is None:
            return []
        return [text_of(t.action) for t in self._episode.transitions]

    @property
    def observations(self) -> list[str]:
        """Observation texts of this episode: the initial one, then one per step."""
        if self._episode is None:
            return []
        return [text_of(o) for o in self._episode.history[::2]]

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
        episode = self._episode
        if episode is None:
            raise RuntimeError("call reset() before calling a tool")
        if episode.done:
            return f"The episode has already ended ({self.end_reason}); no action was taken."
        t = step_episode(self._env, episode, Action(text=text), max_steps=self._max_steps)
        self._info = dict(t.info)
        if self._max_steps is not None and episode.num_steps >= self._max_steps:
            self._info.setdefault("truncated_reason", "max_steps")
        obs_text = text_of(t.observation)
        end = self.end_reason
        return obs_text if end is None else f"{obs_text}\n[episode ended: {end}]"


def _as_task(value: Any) -> Task | None:
    if value is None or isinstance(value, Task):
        return value
    try:
        if isinstance(value, str):
            return Task.model_validate(json.loads(value))
        return Task.model_validate(value)
    except ValueError as exc:
        raise ValueError(f"row column 'task' is not a valid Task (dict or JSON): {exc}") from exc
