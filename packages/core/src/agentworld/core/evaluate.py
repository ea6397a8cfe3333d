"""Fidelity evaluation: score world models' next-observation predictions against real episodes.

Every step of every episode is one :class:`Transition`. Each world model
(the trained one and the baselines ``copy-previous`` / ``empty`` from
:mod:`agentworld.core.builtins` alike) predicts the observation for every
transition in batches; each reward scores every prediction; the means are
aggregated overall, per action type, per turn index, per collecting policy
(``episode.metadata["policy"]``: an expert's transitions are not a random policy's) and
on the subset whose real *output* is non-empty, each with a 95% confidence interval.

Transitions carry a ``split``: :data:`IN_DISTRIBUTION` (the held-out episodes of the
training distribution), :data:`OUT_OF_DISTRIBUTION` (episodes of task and command families
no training split saw, :mod:`agentworld.core.holdout`), :data:`REALISTIC` (episodes of whole real
command sources no training split saw) or the name of an evaluation set (e.g. ``handwritten``:
sessions a policy replays, never trained on). The overall, per-type, per-turn and
per-policy aggregates are over the in-distribution split (all transitions when there is
none); ``by_split*`` hold each split's aggregates side by side. Transitions whose real output
depends on what earlier steps of the same episode wrote (the domain's
``consistency_turns(episode)`` hook) form the *in-episode consistency* subset
(``consistency``, ``by_split_consistency``). Transitions whose real answer the domain's
``is_deterministic(action, observation)`` hook calls deterministic or not are scored apart per
split (``by_split_determinism``; a simulator can only be exact on the deterministic ones), and
every split is aggregated per turn index (``by_split_turn``: drift along the episode).

Rewards receive the parsed observation (``None`` when malformed) as the
prediction, the real observation text as the reference, and a context dict
``{"raw", "domain", "reference", "action", "turn", "episode_id"}``.

Confidence intervals come from scipy (:mod:`agentworld.core.intervals`): Wilson score
intervals for 0/1 scores (a proportion), a percentile bootstrap of the mean for other scores.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from agentworld.core.domain_base import domain_hooks
from agentworld.core.eval_records import (  # noqa: F401 - re-exported: the public names
    DETERMINISTIC,
    IN_DISTRIBUTION,
    NONDETERMINISTIC,
    NO_ACTION_TYPE,
    OUT_OF_DISTRIBUTION,
    REALISTIC,
    Z95,
    EvalResult,
    EvalRow,
    MetricStat,
    Transition,
)
from agentworld.core.formats import sft_pair
from agentworld.core.intervals import interval
from agentworld.core.protocols import RewardFn, WorldModel
from agentworld.core.types import Action, Episode, Observation


def output_text(observation: Observation, domain: Any = None) -> str:
    """The part of an observation that is the environment's *output*.

    Uses the domain's ``output_text(observation)`` (the terminal domain drops its trailing
    prompt line; the default is the whole text).
    """
    return domain_hooks(domain).output_text(observation) if domain is not None else observation.text


def _action_type(action: Action, domain: Any) -> str:
    if domain is not None:
        return str(domain_hooks(domain).action_type(action))
    return action.name or NO_ACTION_TYPE


def transitions(
    episodes: Iterable[Episode], domain: Any = None, split: str = IN_DISTRIBUTION
) -> list[Transition]:
    """One :class:`Transition` per step of each episode, in episode then turn order.

    Args:
        episodes: Real episodes.
        domain: Optional :class:`~agentworld.core.protocols.Domain` for action
            types and (optionally) ``output_text`` and ``consistency_turns``.
        split: The split the episodes belong to (:data:`IN_DISTRIBUTION`,
            :data:`OUT_OF_DISTRIBUTION`, :data:`REALISTIC` or an evaluation set's name).
    """
    out = []
    hooks = domain_hooks(domain) if domain is not None else None
    for episode in episodes:
        dependent = set(hooks.consistency_turns(episode)) if hooks is not None else set()
        for turn, step in enumerate(episode.steps):
            messages, _ = sft_pair(episode, turn)
            out.append(
                Transition(
                    episode_id=episode.id,
                    turn=turn,
                    messages=messages,
                    action=step.action,
                    reference=step.observation,
                    action_type=_action_type(step.action, domain),
                    output_nonempty=bool(output_text(step.observation, domain).strip()),
                    policy=episode.metadata.get("policy"),
                    split=split,
                    consistency=turn in dependent,
                    deterministic=(hooks.is_deterministic(step.action, step.observation)
                                   if hooks is not None else None),
                )
            )
    return out


def stat(values: Sequence[float]) -> MetricStat:
    """Mean, sample std and 95% CI of ``values`` (``n >= 1``; CI from
    :func:`agentworld.core.intervals.interval`: Wilson for 0/1 scores, else bootstrap).

    Raises:
        ValueError: ``values`` is empty.
    """
    n = len(values)
    if n == 0:
        raise ValueError("stat() needs at least one value")
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    low, high = interval(values)
    return MetricStat(mean=mean, n=n, std=std, ci_low=low, ci_high=high)


def _aggregate(rows: Sequence[EvalRow], metrics: Sequence[str]) -> dict[str, MetricStat]:
    return {m: stat([r.scores[m] for r in rows]) for m in metrics}


def _score(
    name: str,
    reward: RewardFn,
    preds: list[str | None],
    refs: list[str],
    ctxs: list[dict[str, Any]],
) -> list[float]:
    scores = [float(s) for s in reward(preds, refs, ctxs)]  # type: ignore[arg-type]
    if len(scores) != len(preds):
        raise ValueError(
            f"reward {name!r} returned {len(scores)} scores for {len(preds)} predictions"
        )
    for s in scores:
        if not (-1e-9 <= s <= 1 + 1e-9):
            raise ValueError(f"reward {name!r} returned {s}, outside [0, 1]")
    return [min(1.0, max(0.0, s)) for s in scores]


def _run_batch(
    model_name: str,
    model: WorldModel,
    batch: Sequence[Transition],
    rewards: Mapping[str, RewardFn],
    domain: Any,
    max_new_tokens: int | None,
) -> list[EvalRow]:
    preds = model.predict([t.messages for t in batch], max_new_tokens=max_new_tokens)
    if len(preds) != len(batch):
        got, want = len(preds), len(batch)
        raise ValueError(f"model {model_name!r} returned {got} predictions for {want} requests")
    observations = [p.observation for p in preds]
    refs = [t.reference.text for t in batch]
    ctxs = [
        {"raw": p.text, "domain": domain, "reference": t.reference, "action": t.action}
        | {"turn": t.turn, "episode_id": t.episode_id}
        for p, t in zip(preds, batch, strict=True)
    ]
    scores = {m: _score(m, r, observations, refs, ctxs) for m, r in rewards.items()}
    return [
        EvalRow(
            model=model_name,
            episode_id=t.episode_id,
            turn=t.turn,
            action=t.action.text,
            action_type=t.action_type,
            output_nonempty=t.output_nonempty,
            policy=t.policy,
            split=t.split,
            consistency=t.consistency,
            deterministic=t.deterministic,
            reference=t.reference.text,
            prediction=p.observation,
            raw=p.text,
            scores={m: s[i] for m, s in scores.items()},
        )
        for i, (p, t) in enumerate(zip(preds, batch, strict=True))
    ]


def evaluate(
    world_models: Mapping[str, WorldModel],
    transitions: Sequence[Transition],
    rewards: Mapping[str, RewardFn],
    domain: Any = None,
    batch_size: int = 32,
    progress: Callable[[int, int], None] | None = None,
    *,
    main_metric: str | None = None,
    max_new_tokens: int | None = None,
) -> EvalResult:
    """Run every world model on every transition and score each prediction with every reward.

    Args:
        world_models: Name -> world model; the first is the primary model.
        transitions: ``[N]`` items from :func:`transitions`.
        rewards: Metric name -> reward.
        domain: Passed to rewards as ``contexts[i]["domain"]``.
        batch_size: Requests per ``predict`` call.
        progress: Called as ``progress(done, total)`` after each batch, with
            ``total = len(world_models) * N``.
        main_metric: Metric plotted by turn in the report; default ``"hybrid"``
            when present, else the first reward.
        max_new_tokens: Passed to ``predict``.

    Raises:
        ValueError: no models, no rewards, no transitions, ``batch_size < 1``, an unknown
            ``main_metric``, or a model/reward returned the wrong number of items.
    """
    if not world_models or not rewards or not transitions:
        raise ValueError("evaluate() needs at least one world model, one reward and one transition")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    metrics = list(rewards)
    main = main_metric or ("hybrid" if "hybrid" in rewards else metrics[0])
    if main not in rewards:
        raise ValueError(f"main_metric {main!r} is not one of the rewards: {', '.join(metrics)}")
    total, done = len(world_models) * len(transitions), 0
    rows: list[EvalRow] = []
    for model_name, model in world_models.items():
        for start in range(0, len(transitions), batch_size):
            batch = transitions[start : start + batch_size]
            rows += _run_batch(model_name, model, batch, rewards, domain, max_new_tokens)
            done += len(batch)
            if progress is not None:
                progress(done, total)
    return _result(rows, list(world_models), metrics, main, transitions)


def _determinism(row: EvalRow) -> str | None:
    if row.deterministic is None:
        return None
    return DETERMINISTIC if row.deterministic else NONDETERMINISTIC


def _result(
    rows: list[EvalRow],
    models: list[str],
    metrics: list[str],
    main: str,
    items: Sequence[Transition],
) -> EvalResult:
    by_model: dict[str, list[EvalRow]] = defaultdict(list)
    for row in rows:
        by_model[row.model].append(row)
    overall, nonempty, by_type, by_turn, by_policy, by_policy_nonempty = {}, {}, {}, {}, {}, {}

    def grouped(rows: Iterable[EvalRow], key: Callable[[EvalRow], Any]) -> dict[Any, Any]:
        groups: dict[Any, list[EvalRow]] = defaultdict(list)
        for r in rows:
            if key(r) is not None:
                groups[key(r)].append(r)
        return {k: _aggregate(v, metrics) for k, v in sorted(groups.items())}

    main_rows = [t for t in items if t.split == IN_DISTRIBUTION]
    main_items = main_rows or list(items)
    in_main = {(t.episode_id, t.turn, t.split) for t in main_items}
    by_split, by_split_ne, by_split_cons, by_split_type, consistency = {}, {}, {}, {}, {}
    by_split_det, by_split_turn = {}, {}
    for name in models:
        everything = by_model[name]
        by_split_det[name] = {
            split: grouped([r for r in everything if r.split == split], _determinism)
            for split in sorted({r.split for r in everything if r.deterministic is not None})
        }
        by_split_turn[name] = {split: grouped([r for r in everything if r.split == split],
                                              lambda r: r.turn)
                               for split in sorted({r.split for r in everything})}
        by_split[name] = grouped(everything, lambda r: r.split)
        by_split_ne[name] = grouped([r for r in everything if r.output_nonempty], lambda r: r.split)
        by_split_cons[name] = grouped([r for r in everything if r.consistency], lambda r: r.split)
        by_split_type[name] = {
            split: grouped([r for r in everything if r.split == split and r.output_nonempty],
                           lambda r: r.action_type)
            for split in sorted({r.split for r in everything})
        }
        dependent = [r for r in everything if r.consistency]
        consistency[name] = _aggregate(dependent, metrics) if dependent else {}
        mine = [r for r in everything if (r.episode_id, r.turn, r.split) in in_main]
        overall[name] = _aggregate(mine, metrics)
        subset = [r for r in mine if r.output_nonempty]
        nonempty[name] = _aggregate(subset, metrics) if subset else {}
        by_type[name] = grouped(mine, lambda r: r.action_type)
        by_turn[name] = grouped(mine, lambda r: r.turn)
        by_policy[name] = grouped(mine, lambda r: r.policy)
        by_policy_nonempty[name] = grouped(subset, lambda r: r.policy)
    return EvalResult(
        models=models,
        metrics=metrics,
        main_metric=main,
        num_episodes=len({t.episode_id for t in main_items}),
        num_transitions=len(main_items),
        num_nonempty=sum(t.output_nonempty for t in main_items),
        splits={
            split: {
                "episodes": len({t.episode_id for t in group}),
                "transitions": len(group),
                "nonempty": sum(t.output_nonempty for t in group),
                "consistency": sum(t.consistency for t in group),
                "deterministic": sum(t.deterministic is True for t in group),
                "nondeterministic": sum(t.deterministic is False for t in group),
            }
            for split in sorted({t.split for t in items})
            for group in [[t for t in items if t.split == split]]
        },
        by_split=by_split,
        by_split_nonempty=by_split_ne,
        by_split_consistency=by_split_cons,
        by_split_action_type_nonempty=by_split_type,
        consistency=consistency,
        num_consistency=sum(t.consistency for t in items),
        by_split_determinism=by_split_det,
        by_split_turn=by_split_turn,
        overall=overall,
        nonempty=nonempty,
        by_action_type=by_type,
        by_turn=by_turn,
        by_policy=by_policy,
        by_policy_nonempty=by_policy_nonempty,
        rows=rows,
    )
