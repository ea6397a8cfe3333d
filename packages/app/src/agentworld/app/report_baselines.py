"""Sections of ``report.md`` that set the trained model beside what needs no training: whether it
beats the retrieval-only baseline ``nearest`` (:mod:`agentworld.core.nearest`) per split, exact
match on real answers that are deterministic vs not, and exact match by turn index per split
(drift along the episode)."""

from __future__ import annotations

from agentworld.app.figure import ordered_splits
from agentworld.app.report_cells import cell as _cell
from agentworld.app.report_cells import table as _table
from agentworld.core.evaluate import DETERMINISTIC, NONDETERMINISTIC, EvalResult, MetricStat

NEAREST = "nearest"


def _metric(result: EvalResult) -> str:
    return "exact_match" if "exact_match" in result.metrics else result.main_metric


def _mean(stats: dict[str, MetricStat] | None, metric: str) -> float | None:
    stat = (stats or {}).get(metric)
    return None if stat is None else stat.mean


def _splits(result: EvalResult) -> list[str]:
    return ordered_splits(result)


def verdict(model: list[float], nearest: list[float]) -> str:
    """``"beats"``, ``"does not beat"`` or ``"ties with"``: the first score that differs decides
    (exact match, then edit similarity)."""
    for a, b in zip(model, nearest):
        if abs(a - b) > 1e-12:
            return "beats" if a > b else "does not beat"
    return "ties with"


def nearest_section(result: EvalResult) -> list[str]:
    """``## Does the trained model beat the nearest real transition?``: one sentence per split,
    the primary model against ``nearest`` on exact match and edit similarity (those of the two
    that were scored, else the main metric); a note when ``nearest`` did not run."""
    lines = ["## Does the trained model beat the nearest real transition?", ""]
    primary = result.models[0]
    if NEAREST not in result.models or primary == NEAREST:
        return lines + [
            "_The retrieval-only baseline `nearest` did not run (no training episodes to look "
            "answers up in: `agentworld eval --train-data URL`, or `nearest` in `[eval] "
            "baselines`), so this report cannot say whether the model beats copying the nearest "
            "real transition._", ""]
    metrics = [m for m in ("exact_match", "edit_similarity") if m in result.metrics]
    metrics = metrics or [result.main_metric]
    lines += ["`nearest` answers, unmodified, the observation of the most similar real "
              "transition of the training episodes (same action after the same observation, "
              "else BM25 over the action, its family and the last line before it).", ""]
    for split in _splits(result):
        mine = [_mean(result.by_split.get(primary, {}).get(split), m) for m in metrics]
        theirs = [_mean(result.by_split.get(NEAREST, {}).get(split), m) for m in metrics]
        if None in mine or None in theirs:
            continue
        scores = "; ".join(f"{m.replace('_', ' ')} {a:.3f} vs {b:.3f}"
                           for m, a, b in zip(metrics, mine, theirs))
        n = result.splits.get(split, {}).get("transitions", 0)
        lines.append(f"- the trained model {verdict(mine, theirs)} the nearest real transition "
                     f"on split {split} ({scores}; n={n})")
    return lines + [""]


def determinism_section(result: EvalResult) -> list[str]:
    """``## Deterministic vs nondeterministic real answers``: exact match (else the main metric)
    per split on the steps whose real answer is a function of the episode so far and on the
    others (the domain's ``is_deterministic``); a note when the domain does not say."""
    metric = _metric(result)
    lines = [f"## Deterministic vs nondeterministic real answers ({metric})", ""]
    rows = []
    for split in _splits(result):
        for kind in (DETERMINISTIC, NONDETERMINISTIC):
            n = result.splits.get(split, {}).get(kind, 0)
            if n:
                rows.append([split, kind, str(n)] + [
                    _cell(result.by_split_determinism.get(m, {}).get(split, {}).get(kind, {})
                          .get(metric)) for m in result.models])
    if not rows:
        return lines + ["_The domain does not say which real answers are deterministic "
                        "(`is_deterministic`)._", ""]
    lines += ["Deterministic: the real answer is a function of the episode so far. "
              "Nondeterministic: it also depends on the clock, process ids or randomness "
              "(`date`, `ps`, `$RANDOM`, `mktemp`, `ls -l`), where no simulator can be exact.", ""]
    lines += _table(["split", "real answer", "n", *result.models], rows)
    only = [split for split in _splits(result) if result.splits.get(split, {}).get(DETERMINISTIC)
            and not result.splits[split].get(NONDETERMINISTIC)]
    if only:
        lines += [f"No step of {', '.join(only)} has a nondeterministic real answer.", ""]
    return lines


def drift_section(result: EvalResult) -> list[str]:
    """``## Drift``: exact match (else the main metric) by turn index, one row per split and turn
    (every turn the data has), one column per model."""
    metric = _metric(result)
    rows = []
    for split in _splits(result):
        first = result.by_split_turn.get(result.models[0], {}).get(split, {})
        for turn in sorted(first):
            rows.append([split, str(turn), str(first[turn][metric].n)] + [
                _cell(result.by_split_turn.get(m, {}).get(split, {}).get(turn, {}).get(metric),
                      ci=False) for m in result.models])
    if not rows:
        return []
    last = max(int(r[1]) for r in rows)
    return [f"## Drift: {metric} by turn index, per split", "",
            f"Turns scored: 0 to {last}; late turns have few transitions (see n).", "",
            *_table(["split", "turn", "n", *result.models], rows)]
