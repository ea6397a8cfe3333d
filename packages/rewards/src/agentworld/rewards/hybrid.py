"""The hybrid reward: a normalised weighted mix of named fidelity rewards.

Components are looked up by name through the plugin manager
(:func:`agentworld.core.plugins.get_reward`), so any installed reward,
built-in or third-party, can be mixed in by configuration alone::

    Hybrid(weights={"exact_match": 0.2, "edit_similarity": 0.3, "domain": 0.5},
           components={"edit_similarity": {"metric": "indel"}})

Rule-based and model-based components
-------------------------------------
A component that is a :class:`~agentworld.core.protocols.ModelBasedReward` with
``model_based = True`` (``embedding``, ``llm_judge``) is
*model-based*; every other one is a *rule*. Content the domain marks deterministic is scored
by the rules alone (their weights renormalised among themselves); other content by all
components. Per transition, the content is deterministic when:

1. the domain (``contexts[i]["domain"]``, an object or a registered name) says so with
   ``is_deterministic(action: Action, reference: Observation) -> bool | None`` for
   ``contexts[i]["action"]`` (an ``Action`` or its text) and the reference; when it
   answers ``None`` (does not say),
2. the domain's ``action_type(action)`` is listed for that domain in the hybrid's
   ``deterministic_action_types`` option (e.g. ``{"terminal": ["pwd", "cd"]}``).

Without a domain or an action in the context, content counts as nondeterministic. A hybrid
without any rule component scores deterministic content with all its components.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

from agentworld.core import plugins
from agentworld.core.domain_base import domain_hooks
from agentworld.core.protocols import ModelBasedReward
from agentworld.core.types import Action, Observation
from agentworld.rewards.rules import check_batch, resolve_domain

DEFAULT_WEIGHTS: dict[str, float] = {"exact_match": 0.2, "edit_similarity": 0.3, "domain": 0.5}


@dataclass(slots=True)
class HybridResult:
    """A scored batch.

    Attributes:
        scores: ``[batch]`` hybrid rewards in ``[0, 1]``.
        components: Component name -> ``[batch]`` scores in ``[0, 1]``; ``None`` where the
            component did not run (a model-based one on deterministic content).
        deterministic: ``[batch]`` whether the content was judged deterministic.
    """

    scores: list[float]
    components: dict[str, list[float | None]]
    deterministic: list[bool]


class Hybrid:
    """``score_i = sum_k w_k * r_k(i) / sum_k w_k`` over the component rewards ``r_k`` run on ``i``.

    Args:
        weights: Component name -> non-negative weight, summing to a positive number
            (normalised, so ``{"a": 1, "b": 3}`` means 25% / 75%). Defaults to
            :data:`DEFAULT_WEIGHTS`. Zero-weight components are not run.
        components: Optional component name -> options passed to that
            reward's factory (``get_reward(name, **options)``).
        deterministic_action_types: Domain name -> action types (``domain.action_type``)
            whose content is deterministic (see the module docstring); used for domains
            whose ``is_deterministic`` answers ``None`` (does not say).

    Raises:
        ValueError: a weight is not a finite number >= 0, the weights do not sum to a
            positive number, ``components`` names a reward absent from ``weights``, or a
            name is not a registered reward (the message lists the installed ones).
    """

    name = "hybrid"

    def __init__(
        self,
        weights: Mapping[str, float] | None = None,
        components: Mapping[str, Mapping[str, Any]] | None = None,
        deterministic_action_types: Mapping[str, Collection[str]] | None = None,
    ):
        weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        components = dict(components or {})
        for key, w in weights.items():
            if isinstance(w, bool) or not isinstance(w, Real) or not math.isfinite(w) or w < 0:
                raise ValueError(
                    f"hybrid weight of {key!r} must be a finite number >= 0, got {w!r}"
                )
        total = sum(weights.values())
        if total <= 0:
            raise ValueError(f"hybrid weights must sum to a positive number, got {weights}")
        extra = sorted(set(components) - set(weights))
        if extra:
            raise ValueError(f"hybrid components {extra} have options but no weight")
        valid = [n for n in plugins.names("reward") if n != self.name]
        unknown = sorted(set(weights) - set(valid))
        if unknown:
            raise ValueError(
                f"unknown hybrid component(s) {', '.join(map(repr, unknown))}; "
                f"installed rewards: {', '.join(valid) or 'none'}"
            )
        self.weights: dict[str, float] = {k: w / total for k, w in weights.items() if w > 0}
        self.rewards: dict[str, Any] = {
            k: plugins.get_reward(k, **dict(components.get(k, {}))) for k in self.weights
        }
        self.model_based: frozenset[str] = frozenset(
            k for k, r in self.rewards.items() if isinstance(r, ModelBasedReward) and r.model_based
        )
        self.deterministic_action_types = {
            d: frozenset(types) for d, types in (deterministic_action_types or {}).items()
        }

    def is_deterministic(self, reference: str, context: Mapping[str, Any]) -> bool:
        """Whether the domain marks this transition's content deterministic (module docstring)."""
        domain = resolve_domain(context.get("domain"))
        action = context.get("action")
        if domain is None or action is None:
            return False
        if isinstance(action, str):
            action = Action(text=action)
        observation = context.get("reference")
        if not isinstance(observation, Observation):
            observation = Observation(text=reference)
        verdict = domain_hooks(domain).is_deterministic(action, observation)
        if verdict is not None:
            return bool(verdict)
        types = self.deterministic_action_types.get(domain.name, frozenset())
        return bool(types) and domain.action_type(action) in types

    def evaluate(
        self,
        predictions: Sequence[str | None],
        references: Sequence[str],
        contexts: Sequence[Mapping[str, Any]],
    ) -> HybridResult:
        """Score a batch (``[batch]`` each) with the per-component scores.

        Rules run on the whole batch, model-based components on its nondeterministic items
        only (one call each, on that sub-batch).

        Raises:
            ValueError: the inputs differ in length, or a component returned the wrong number
                of scores.
        """
        check_batch(predictions, references, contexts)
        n = len(predictions)
        deterministic = [self.is_deterministic(r, c) for r, c in zip(references, contexts)]
        rules_only = bool(set(self.weights) - self.model_based)
        open_items = [i for i in range(n) if not (deterministic[i] and rules_only)]
        parts: dict[str, list[float | None]] = {}
        for key, reward in self.rewards.items():
            items = open_items if key in self.model_based else list(range(n))
            column: list[float | None] = [None] * n
            if items:
                got = reward(
                    [predictions[i] for i in items],
                    [references[i] for i in items],
                    [contexts[i] for i in items],
                )
                scores = [float(s) for s in got]
                if len(scores) != len(items):
                    raise ValueError(
                        f"hybrid component {key!r} returned {len(scores)} scores "
                        f"for {len(items)} inputs"
                    )
                for i, s in zip(items, scores, strict=True):
                    column[i] = s
            parts[key] = column
        mixed = []
        for i in range(n):
            ran = {k: col[i] for k, col in parts.items() if col[i] is not None}
            total = sum(self.weights[k] for k in ran)
            value = sum(self.weights[k] * s for k, s in ran.items()) / total  # type: ignore[operator]
            mixed.append(min(1.0, max(0.0, value)))
        return HybridResult(mixed, parts, deterministic)

    def breakdown(
        self,
        predictions: Sequence[str | None],
        references: Sequence[str],
        contexts: Sequence[Mapping[str, Any]],
    ) -> dict[str, list[float | None]]:
        """Each component's ``[batch]`` scores by component name (``None``: did not run)."""
        return self.evaluate(predictions, references, contexts).components

    def __call__(
        self,
        predictions: Sequence[str | None],
        references: Sequence[str],
        contexts: Sequence[Mapping[str, Any]],
    ) -> list[float]:
        """Score a batch: ``[batch]`` in, ``[batch]`` floats in ``[0, 1]`` out."""
        return self.evaluate(predictions, references, contexts).scores
