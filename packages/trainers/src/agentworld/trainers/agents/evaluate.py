"""Evaluating an agent on the REAL environment, with 95% confidence intervals.

Success rate: Wilson score interval (E. B. Wilson, 1927, "Probable inference, the law of
succession, and statistical inference", JASA 22(158):209-212), which stays inside [0, 1]
and behaves at rates of 0 and 1 where the normal (Wald) interval collapses.
Mean return: normal-approximation interval ``mean +- z * s / sqrt(n)`` with the sample
standard deviation ``s`` (central limit theorem; for the >= 100 episodes used here Student's
t quantile differs from ``z`` by under 1%).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from typing import Any

from agentworld.core.env_checks import CheckedEnvironment
from agentworld.trainers.agents.envs import (
    Actor,
    EpisodeResult,
    domain_actions,
    is_success,
    run_real_episode,
)


def z_value(confidence: float = 0.95) -> float:
    """Two-sided standard-normal quantile: ``z_value(0.95) = 1.95996...``.

    Raises:
        ValueError: ``confidence`` not in (0, 1).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return statistics.NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval ``(low, high)`` of a success probability (Wilson 1927).

    ``center = (p + z^2 / 2n) / (1 + z^2 / n)``,
    ``half = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)`` with ``p = successes / n``.

    Raises:
        ValueError: ``n < 1`` or ``successes`` outside ``[0, n]``.
    """
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n >= 1, got {successes}/{n}")
    z = z_value(confidence)
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low = 0.0 if successes == 0 else max(0.0, center - half)  # exact at the bounds: no
    high = 1.0 if successes == n else min(1.0, center + half)  # rounding residue there
    return low, high


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: normal-approximation interval ``mean +- z * s / sqrt(n)``.

    With one value the interval is the value itself.

    Raises:
        ValueError: ``values`` is empty.
    """
    if not values:
        raise ValueError("mean_interval needs at least one value")
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    half = z_value(confidence) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def summarize(domain: Any, results: Sequence[EpisodeResult]) -> dict[str, Any]:
    """Success rate, mean return and mean length of ``results`` with 95% intervals.

    Returns:
        ``{"episodes", "successes", "success_rate", "success_ci": [low, high],
        "mean_return", "return_ci": [low, high], "mean_length" (steps), "steps"}``.
    """
    successes = sum(is_success(domain, r) for r in results)
    mean, low, high = mean_interval([r.ret for r in results])
    return {
        "episodes": len(results),
        "successes": successes,
        "success_rate": successes / len(results),
        "success_ci": list(wilson_interval(successes, len(results))),
        "mean_return": mean,
        "return_ci": [low, high],
        "mean_length": statistics.fmean(r.length for r in results),
        "steps": sum(r.length for r in results),
    }


def evaluate_agent(
    agent: Actor, domain: Any, episodes: int, seed: int, *, max_steps: int = 200
) -> dict[str, Any]:
    """Greedy ``agent`` on the domain's real environment, no learning.

    Episode ``i`` resets with seed ``seed + i`` and task ``i`` of
    ``domain.tasks().sample(episodes, seed=seed)``, so two agents evaluated with the same
    seed face the same episodes.

    Args:
        agent: Anything with ``act(observation, greedy) -> action word``.
        domain: The domain (``make_env()``, ``tasks()``).
        episodes: Number of evaluation episodes (>= 1).
        seed: Seed of the first episode.
        max_steps: Steps before an episode is cut (counted as not successful).

    Returns:
        :func:`summarize`'s dict.

    Raises:
        ValueError: ``episodes < 1``.
    """
    if episodes < 1:
        raise ValueError(f"eval episodes must be >= 1, got {episodes}")
    tasks = domain.tasks().sample(episodes, seed=seed)
    env = CheckedEnvironment(domain, domain.make_env())  # a plugin's mistake, named
    try:
        results = [
            run_real_episode(
                env,
                agent,
                task=tasks[i],
                seed=seed + i,
                max_steps=max_steps,
                learn=False,
                greedy=True,
            )
            for i in range(episodes)
        ]
    finally:
        env.close()
    return summarize(domain, results)


class RandomAgent:
    """Uniformly random action words (``random.Random(seed)``); ignores ``greedy``."""

    def __init__(self, actions: Sequence[str], seed: int = 0):
        self.actions, self.rng = list(actions), random.Random(seed)

    def act(self, observation: str, greedy: bool = False) -> str:
        """A uniformly random action word."""
        return self.actions[self.rng.randrange(len(self.actions))]


def evaluate_random(
    domain: Any, episodes: int, seed: int, *, max_steps: int = 200
) -> dict[str, Any]:
    """The random-policy baseline: :func:`evaluate_agent` of a :class:`RandomAgent` over the
    domain's action words, on the same seeds and tasks.

    Raises:
        ValueError: ``episodes < 1`` or the domain has no action list.
    """
    agent = RandomAgent(domain_actions(domain), seed=seed)
    return evaluate_agent(agent, domain, episodes, seed, max_steps=max_steps)
