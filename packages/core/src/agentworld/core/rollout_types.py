"""The records of a rollout (:mod:`agentworld.core.rollout`): how an episode ended, one step, one
episode, and the policy and hook types; shared by the list rollout and the vector one
(:mod:`agentworld.core.vector_rollout`), which both import them from here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from agentworld.core.types import Action, Observation, ObservationText, Task


class Outcome(str, Enum):
    """How an episode ended."""

    TERMINATED = "terminated"  # the environment ended it (goal, failure, a reward footer)
    TRUNCATED = "truncated"  # the environment's own step limit
    MAX_STEPS = "max_steps"  # the rollout's ``max_steps``
    STOPPED = "stopped"  # the policy returned ``None``
    MALFORMED = "malformed"  # a simulated step whose answer did not parse
    ERROR = "error"  # the engine refused a simulated step (e.g. the KV budget)


@dataclass(slots=True)
class Transition:
    """One environment step: the action sent and what ``step`` returned (the observation as
    the ``record`` hook kept it)."""

    action: Any
    observation: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


@dataclass(slots=True)
class RolloutEpisode:
    """One episode of a rollout, running or finished.

    Attributes:
        index: Position of its environment in the rollout (sub-environment of a vector env).
        task: The task given to ``reset`` (``options={"task": task}``), or ``None``.
        seed: The seed given to ``reset``.
        initial_observation: What ``reset`` returned (after ``record``).
        reset_info: The ``info`` of ``reset``.
        transitions: One per step, in order.
        outcome: ``None`` while running.
    """

    index: int
    task: Task | None
    seed: int | None
    initial_observation: Any
    reset_info: dict[str, Any]
    transitions: list[Transition] = field(default_factory=list)
    outcome: Outcome | None = None

    @property
    def done(self) -> bool:
        return self.outcome is not None

    @property
    def observation(self) -> Any:
        """The latest observation."""
        return self.transitions[-1].observation if self.transitions else self.initial_observation

    @property
    def previous_observation(self) -> Any:
        """The observation the latest action was chosen on (the one before :attr:`observation`)."""
        if len(self.transitions) > 1:
            return self.transitions[-2].observation
        return self.initial_observation

    @property
    def history(self) -> list[Any]:
        """``[initial observation, action 1, observation 1, ...]``."""
        out = [self.initial_observation]
        for t in self.transitions:
            out += [t.action, t.observation]
        return out

    @property
    def num_steps(self) -> int:
        return len(self.transitions)

    @property
    def episode_return(self) -> float:
        """Undiscounted sum of the rewards."""
        return sum(t.reward for t in self.transitions)


Policy = Callable[[Sequence[RolloutEpisode]], Sequence[Any]]
Record = Callable[[Any, Any], Any]
OnStep = Callable[[RolloutEpisode, Transition], None]


def each(act: Callable[[RolloutEpisode], Any]) -> Policy:
    """A batched policy from a per-episode one (called in episode order)."""
    return lambda episodes: [act(e) for e in episodes]


def text_of(observation: Any) -> str:
    """The text of an observation (or action): ``.text`` of an
    :class:`~agentworld.core.types.Observation`, :class:`~agentworld.core.types.ObservationText`
    or :class:`~agentworld.core.types.Action`, else ``str(observation)``."""
    if isinstance(observation, (Observation, ObservationText, Action)):
        return observation.text
    return observation if isinstance(observation, str) else str(observation)


def outcome_of(terminated: bool, truncated: bool, info: dict[str, Any]) -> Outcome | None:
    """The outcome a step's flags give (``None``: the episode goes on); a truncation with
    ``info["truncated_reason"]`` ``"malformed"`` or ``"error"`` (a simulated step) is that."""
    if terminated:
        return Outcome.TERMINATED
    if truncated:
        reason = info.get("truncated_reason")
        return Outcome(reason) if reason in ("malformed", "error") else Outcome.TRUNCATED
    return None


def policy_actions(policy: Policy, episodes: Sequence[RolloutEpisode]) -> list[Any]:
    """``policy(episodes)`` as a list, checked to hold one action per episode.

    Raises:
        ValueError: it does not.
    """
    actions = list(policy(episodes))
    if len(actions) != len(episodes):
        raise ValueError(f"the policy returned {len(actions)} actions for {len(episodes)} episodes")
    return actions
