"""The control: replay a simulated episode's actions in the real environment for its true
outcome, and how well a reward source agrees with it.

This costs a real rollout per episode and is for measurement only (no agent is trained on
it). The agreement of a source with the truth is the precision and recall of its successes
(a simulated success the real replay refutes is the agent exploiting the simulator).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from agentworld.core.types import Action, Task
from agentworld.trainers.agents.lm.data import observation_text


@dataclass(slots=True)
class Replay:
    """The real outcome of an action sequence: ``success`` (the environment's
    ``info["success"]`` at any step, else a positive reward on termination), ``steps`` run
    (the real episode may end before the actions do) and the real observations."""

    success: bool
    steps: int
    observations: list[str]


def replay(env: Any, task: Task, actions: Sequence[str]) -> Replay:
    """Reset the real ``env`` to ``task`` (seed 0) and run ``actions`` in order until one
    terminates or truncates the episode.

    Raises:
        whatever the environment raises on reset (e.g. a server that does not start).
    """
    env.reset(seed=0, options={"task": task})
    success, observations = False, []
    for action in actions:
        observation, reward, terminated, truncated, info = env.step(Action(text=action))
        observations.append(observation_text(observation))
        reported = info.get("success")
        success = success or (reported if isinstance(reported, bool) else terminated and reward > 0)
        if terminated or truncated:
            break
    return Replay(success, len(observations), observations)


def replay_many(
    env_factory: Callable[[], Any],
    episodes: Sequence[tuple[Task, Sequence[str]]],
    workers: int = 4,
) -> list[Replay]:
    """:func:`replay` of ``[n]`` ``(task, actions)`` pairs on ``workers`` real environments
    at a time (each made by ``env_factory`` and closed at the end); results in order."""
    if not episodes:
        return []
    workers = max(1, min(workers, len(episodes)))
    envs = [env_factory() for _ in range(workers)]
    try:
        def run(j: int) -> list[tuple[int, Replay]]:
            return [(i, replay(envs[j], *episodes[i])) for i in range(j, len(episodes), workers)]

        with ThreadPoolExecutor(workers) as pool:
            done = [pair for part in pool.map(run, range(workers)) for pair in part]
    finally:
        for env in envs:
            env.close()
    return [r for _, r in sorted(done, key=lambda pair: pair[0])]


@dataclass(slots=True)
class Agreement:
    """Confusion counts of a source's successes against the true ones, and the ratios
    (``None`` where undefined: no predicted or no true success)."""

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def refuted(self) -> float | None:
        """Fraction of the source's successes that the real replay refutes (``1 - precision``)."""
        return self.fp / (self.tp + self.fp) if self.tp + self.fp else None

    def as_dict(self) -> dict[str, Any]:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
                "precision": self.precision, "recall": self.recall, "refuted": self.refuted}  # fmt: skip


def agreement(predicted: Sequence[bool], true: Sequence[bool]) -> Agreement:
    """Precision/recall counts of ``[n]`` predicted successes against ``[n]`` true ones.

    Raises:
        ValueError: the sequences differ in length.
    """
    if len(predicted) != len(true):
        raise ValueError(f"{len(predicted)} predictions for {len(true)} true outcomes")
    pairs = list(zip(predicted, true, strict=True))
    return Agreement(
        tp=sum(p and t for p, t in pairs), fp=sum(p and not t for p, t in pairs),
        fn=sum(t and not p for p, t in pairs), tn=sum(not p and not t for p, t in pairs),
    )  # fmt: skip
