"""95% confidence intervals of a mean score, from scipy (the ``stats`` extra of agentworld-core).

- Scores that are all 0 or 1 (exact match, success) are a proportion: the Wilson score
  interval (Wilson 1927; ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``).
  It stays inside ``[0, 1]`` and is never degenerate: 0 successes in 40 give ``[0, 0.088]``,
  not the normal approximation's ``[0, 0]``.
- Other scores in ``[0, 1]`` (similarities, partial credit): the percentile bootstrap of the
  mean (``scipy.stats.bootstrap``, 1,000 resamples, seeded so reports are reproducible).
- One non-binary score: the whole ``[0, 1]`` range (nothing is known about the spread).
"""

from __future__ import annotations

from collections.abc import Sequence

from agentworld.core.extras import require

CONFIDENCE = 0.95
RESAMPLES = 1000


def is_binary(values: Sequence[float]) -> bool:
    """Whether every value is exactly 0 or 1."""
    return all(v in (0, 1) for v in values)


def interval(values: Sequence[float]) -> tuple[float, float]:
    """``(low, high)`` of the 95% confidence interval of ``mean(values)`` (see the module docstring).

    Raises:
        ValueError: ``values`` is empty.
    """
    n = len(values)
    if n == 0:
        raise ValueError("a confidence interval needs at least one value")
    if is_binary(values):
        stats = require("scipy.stats", "stats", "a confidence interval")
        ci = stats.binomtest(int(sum(values)), n).proportion_ci(CONFIDENCE, method="wilson")
        return float(ci.low), float(ci.high)
    if n == 1:
        return 0.0, 1.0
    if min(values) == max(values):
        return float(values[0]), float(values[0])  # every resample has the same mean
    np = require("numpy", "stats", "a confidence interval")
    stats = require("scipy.stats", "stats", "a confidence interval")
    res = stats.bootstrap(
        (np.asarray(values, dtype=float),),
        np.mean,
        confidence_level=CONFIDENCE,
        n_resamples=RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(0),
    )
    low, high = res.confidence_interval
    return max(0.0, float(low)), min(1.0, float(high))
