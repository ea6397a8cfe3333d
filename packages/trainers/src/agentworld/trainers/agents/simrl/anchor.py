"""Re-anchoring, a mitigation of the sim-to-real gap: every ``every`` simulated steps, and at
the end of the episode, the agent's actions so far are run in the real environment, and the
real observation and reward replace the simulated ones (in what the agent sees and in the
world model's history, :meth:`agentworld.sim.SimEnv.anchor`).

A :class:`RealTwin` keeps one real environment beside a simulated one, reset to the episode's
task at its first anchor and caught up at each anchor with the actions it has not run yet
(the real episode advances only at anchors, so each action is run in the real environment
at most once). The real steps spent are counted: they are the price of the mitigation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentworld.core.types import Action, Task
from agentworld.trainers.agents.lm.data import observation_text


@dataclass(slots=True, frozen=True)
class Anchoring:
    """When to re-anchor: at steps ``every``, ``2 * every``, ... of an episode (``0``: never)
    and, with ``at_end``, at the step the episode ends; ``real_env``: makes a real environment
    (Gymnasium order, ``reset(options={"task": task})``).

    Raises:
        ValueError: ``every`` < 0, or neither ``every`` nor ``at_end``.
    """

    real_env: Callable[[], Any]
    every: int = 0
    at_end: bool = True

    def __post_init__(self) -> None:
        if self.every < 0 or (self.every == 0 and not self.at_end):
            raise ValueError(f"re-anchoring needs every >= 1 or at_end, got every={self.every}, "
                             f"at_end={self.at_end}")  # fmt: skip

    def due(self, steps: int, ended: bool) -> bool:
        """Whether the episode's ``steps``-th step (1-based) is anchored; ``ended``: the
        simulated episode ends there."""
        return (self.every > 0 and steps % self.every == 0) or (self.at_end and ended)


@dataclass(slots=True)
class RealStep:
    """The real environment after an anchor: its last ``observation`` and ``reward``, whether
    the real episode ``ended`` (terminated or truncated), its ``success`` (``info["success"]``
    at any real step, else a positive reward on termination, as
    :func:`agentworld.trainers.agents.simrl.replay.replay` counts it) and the ``steps`` run
    for this anchor."""

    observation: str
    reward: float
    ended: bool
    success: bool
    steps: int


class RealTwin:
    """One real environment that follows a simulated episode's actions at its anchors.

    Args:
        make_env: Makes the real environment (made at the first anchor, closed by
            :meth:`close`).
    """

    def __init__(self, make_env: Callable[[], Any]):
        self.make_env = make_env
        self.env: Any = None
        self.real_steps = 0  # over every episode
        self._run = 0  # actions of the current episode run in the real environment
        self._last: RealStep | None = None

    def restart(self) -> None:
        """Forget the current episode (the next :meth:`catch_up` resets the real one)."""
        self._run, self._last = 0, None

    def catch_up(self, task: Task | None, actions: Sequence[str]) -> RealStep:
        """Run the actions of ``actions`` (the episode's, oldest first) that the real
        environment has not run, stopping where the real episode ends; the real environment
        is reset to ``task`` (seed 0) first when this episode has not been anchored yet.

        Raises:
            ValueError: ``actions`` is shorter than what was already run (another episode).
            whatever the real environment raises (e.g. a server that does not start).
        """
        if len(actions) < self._run:
            raise ValueError(f"{len(actions)} actions but {self._run} already run: call restart() "
                             "between episodes")  # fmt: skip
        if self.env is None:
            self.env = self.make_env()
        if self._last is None:
            self.env.reset(seed=0, options={"task": task})
            self._last = RealStep("", 0.0, False, False, 0)
        last, ran = self._last, 0
        while self._run < len(actions) and not last.ended:
            step = self.env.step(Action(text=actions[self._run]))
            observation, reward, terminated, truncated, info = step
            self._run += 1
            ran += 1
            reported = info.get("success")
            won = reported if isinstance(reported, bool) else bool(terminated and reward > 0)
            last = RealStep(observation_text(observation), float(reward), bool(terminated or truncated),
                            last.success or won, 0)  # fmt: skip
        self.real_steps += ran
        self._last = last
        return RealStep(last.observation, last.reward, last.ended, last.success, ran)

    def close(self) -> None:
        """Close the real environment."""
        if self.env is not None:
            self.env.close()
            self.env = None
