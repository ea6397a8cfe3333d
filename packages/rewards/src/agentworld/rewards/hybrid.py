"""The hybrid reward: a normalised weighted mix of named fidelity rewards.

Components are looked up by name through the plugin manager
(:func:`agentworld.core.plugins.get_reward`), so any installed reward,
built-in or third-party, can be mixed in by configuration alone::

    Hybrid(weights={"exact_match": 0.2, "edit_similarity": 0.3, "domain": 0.5},
           components={"edit_similarity": {"metric": "indel"}})
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from agentworld.core import plugins
from agentworld.rewards.rules import check_batch

DEFAULT_WEIGHTS: dict[str, float] = {"exact_match": 0.2, "edit_similarity": 0.3, "domain": 0.5}


class Hybrid:
    """``score_i = sum_k w_k * r_k(i) / sum_k w_k`` over named component rewards ``r_k``.

    Args:
        weights: Component name -> non-negative weight (normalised to sum to
            1 here, so ``{"a": 1, "b": 3}`` means 25% / 75%). Defaults to
            :data:`DEFAULT_WEIGHTS`. Zero-weight components are not run.
        components: Optional component name -> options passed to that
            reward's factory (``get_reward(name, **options)``).

    Raises:
        ValueError: a weight is negative or not finite, all weights are zero,
            ``components`` names a reward absent from ``weights``, or a name
            is not a registered reward (the message lists the valid ones).
    """

    name = "hybrid"

    def __init__(
        self,
        weights: Mapping[str, float] | None = None,
        components: Mapping[str, Mapping[str, Any]] | None = None,
    ):
        weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        components = dict(components or {})
        for key, w in weights.items():
            if not math.isfinite(w) or w < 0:
                raise ValueError(f"hybrid weight of {key!r} must be finite and >= 0, got {w}")
        total = sum(weights.values())
        if total <= 0:
            raise ValueError(f"hybrid weights must not all be zero, got {weights}")
        extra = sorted(set(components) - set(weights))
        if extra:
            raise ValueError(f"hybrid components {extra} have options but no weight")
        valid = [n for n in plugins.names("reward") if n != self.name]
        unknown = sorted(set(weights) - set(plugins.names("reward")))
        if unknown:
            raise ValueError(
                f"unknown hybrid component(s) {', '.join(map(repr, unknown))}; "
                f"valid components: {', '.join(valid) or 'none'}"
            )
        self.weights: dict[str, float] = {k: w / total for k, w in weights.items() if w > 0}
        self.rewards: dict[str, Any] = {
            k: plugins.get_reward(k, **dict(components.get(k, {}))) for k in self.weights
        }

    def breakdown(
        self,
        predictions: Sequence[str | None],
        references: Sequence[str],
        contexts: Sequence[dict[str, Any]],
    ) -> dict[str, list[float]]:
        """Each component's ``[batch]`` scores, by component name (for logging).

        Raises:
            ValueError: a component returned the wrong number of scores.
        """
        check_batch(predictions, references, contexts)
        out = {}
        for key, reward in self.rewards.items():
            scores = [float(s) for s in reward(predictions, references, contexts)]
            if len(scores) != len(predictions):
                got, want = len(scores), len(predictions)
                raise ValueError(
                    f"hybrid component {key!r} returned {got} scores for {want} inputs"
                )
            out[key] = scores
        return out

    def __call__(
        self,
        predictions: Sequence[str | None],
        references: Sequence[str],
        contexts: Sequence[dict[str, Any]],
    ) -> list[float]:
        """Score a batch: ``[batch]`` in, ``[batch]`` floats in ``[0, 1]`` out."""
        parts = self.breakdown(predictions, references, contexts)
        mixed = [0.0] * len(predictions)
        for key, scores in parts.items():
            w = self.weights[key]
            for i, s in enumerate(scores):
                mixed[i] += w * s
        return [min(1.0, max(0.0, m)) for m in mixed]
