"""Real-env evaluation: confidence intervals on known values, success rules, the random baseline."""

from __future__ import annotations

import pytest

from agentworld.core.plugins import get_domain
from agentworld.trainers.agents.envs import EpisodeResult, Outcome, Source, is_success
from agentworld.trainers.agents.evaluate import (
    evaluate_random,
    mean_interval,
    summarize,
    wilson_interval,
    z_value,
)


def test_z_value() -> None:
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert z_value(0.99) == pytest.approx(2.575829, abs=1e-6)
    with pytest.raises(ValueError):
        z_value(1.0)


def test_wilson_interval_known_values() -> None:
    # 8/10: p = .8, z = 1.96: center (.8 + .19208) / 1.38416 = .71674,
    # half 1.96 / 1.38416 * sqrt(.016 + .009604) = .22658 (Wilson 1927).
    low, high = wilson_interval(8, 10)
    assert (low, high) == (pytest.approx(0.4902, abs=1e-4), pytest.approx(0.9433, abs=1e-4))
    # 0/10 and 10/10: z^2 / (n + z^2) = 3.8415 / 13.8415 = .2775
    assert wilson_interval(0, 10) == (0.0, pytest.approx(0.2775, abs=1e-4))
    assert wilson_interval(10, 10) == (pytest.approx(0.7225, abs=1e-4), 1.0)
    # Large n: close to the Wald interval p +- z sqrt(p(1-p)/n) = .5 +- .0310.
    low, high = wilson_interval(500, 1000)
    assert (low, high) == (pytest.approx(0.4691, abs=1e-4), pytest.approx(0.5309, abs=1e-4))
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_mean_interval_known_values() -> None:
    # [1..5]: mean 3, s = sqrt(2.5) = 1.5811, half = 1.96 * 1.5811 / sqrt(5) = 1.3859.
    mean, low, high = mean_interval([1, 2, 3, 4, 5])
    assert mean == 3.0
    assert (low, high) == (pytest.approx(1.6141, abs=1e-4), pytest.approx(4.3859, abs=1e-4))
    assert mean_interval([2.0]) == (2.0, 2.0, 2.0)
    with pytest.raises(ValueError):
        mean_interval([])


def test_success_rule_and_summary() -> None:
    class Lake:
        name = "lake"

    goal = EpisodeResult(Source.REAL, 1.0, 6, Outcome.TERMINATED, 1.0)
    hole = EpisodeResult(Source.REAL, 0.0, 3, Outcome.TERMINATED, 0.0)
    dropoff = EpisodeResult(Source.REAL, -5.0, 25, Outcome.TERMINATED, 20.0)  # Taxi: late success
    cut = EpisodeResult(Source.REAL, 0.0, 100, Outcome.TRUNCATED, 0.0)
    assert [is_success(Lake(), r) for r in (goal, hole, dropoff, cut)] == [True, False, True, False]
    summary = summarize(Lake(), [goal, hole, dropoff, cut])
    assert summary["successes"] == 2 and summary["success_rate"] == 0.5
    assert summary["mean_return"] == pytest.approx(-1.0)
    assert summary["mean_length"] == pytest.approx(33.5) and summary["steps"] == 134
    assert summary["success_ci"] == list(wilson_interval(2, 4))

    class Custom(Lake):
        actions = ["left", "right"]

        def is_success(self, result: EpisodeResult) -> bool:
            return result.length < 10

    assert [is_success(Custom(), r) for r in (goal, hole, cut)] == [True, True, False]


def test_random_baseline_on_real_frozenlake_is_seeded_and_poor() -> None:
    domain = get_domain("frozenlake-4x4")
    first = evaluate_random(domain, episodes=200, seed=0)
    assert first == evaluate_random(domain, episodes=200, seed=0)
    assert first["episodes"] == 200
    # A uniform random walk reaches G on this map in about 1.4% of episodes.
    assert first["success_rate"] < 0.06
    assert first["success_ci"][0] <= first["success_rate"] <= first["success_ci"][1]
    assert first["mean_length"] < 20  # most walks end early in a hole
