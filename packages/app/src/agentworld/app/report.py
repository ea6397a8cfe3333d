"""Fidelity report of an :class:`~agentworld.core.evaluate.EvalResult`.

:func:`write_report` writes into a run directory (any fsspec URL):

* ``metrics.json`` - the aggregates (``EvalResult`` without per-transition
  rows) plus ``extra`` run facts;
* ``predictions.jsonl`` - one :class:`~agentworld.core.evaluate.EvalRow` per
  (model, transition);
* ``report.md`` - markdown tables (overall, non-empty-output subset, in- vs
  out-of-distribution and in-episode consistency side by side, whether the model beats the
  retrieval-only baseline ``nearest`` per split, deterministic vs nondeterministic real answers,
  per action type, per collecting policy, per turn index and per split and turn: drift;
  :mod:`agentworld.app.report_baselines`) and example predictions vs references;
* ``fidelity.png`` - :mod:`agentworld.app.figure`: metrics overall and on non-empty outputs,
  the main metric by turn and by action type, the training loss of the stages that ran, exact
  match by turn index per split (drift).

Every file is written atomically (temporary sibling, then rename).
matplotlib is imported lazily and drawn with the Agg canvas (no pyplot, no
global backend change, no display needed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import fsspec

from agentworld.app.figure import render_figure
from agentworld.app.report_baselines import determinism_section, drift_section, nearest_section
from agentworld.app.report_cells import cell as _cell
from agentworld.app.report_cells import table as _table
from agentworld.core.evaluate import EvalResult, EvalRow, MetricStat
from agentworld.core.io import atomic_write, iter_jsonl, write_jsonl

NUM_EXAMPLES = 3


def _metric_table(result: EvalResult, groups: dict[str, dict[str, MetricStat]]) -> list[str]:
    rows = [
        [m] + [_cell(groups.get(name, {}).get(m)) for name in result.models] for m in result.metrics
    ]
    return _table(["metric", *result.models], rows)


def _fenced(text: str | None) -> str:
    if text is None:
        return "_(malformed answer: no single closed observation block)_"
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}text\n{text}\n{fence}"


def _inline(text: str) -> str:
    runs = [len(r) for r in re.findall(r"`+", text)]
    ticks = "`" * (max(runs, default=0) + 1)
    return f"{ticks} {text} {ticks}" if runs else f"`{text}`"


def _examples(result: EvalResult, k: int) -> list[str]:
    primary = [r for r in result.rows if r.model == result.models[0]]
    chosen = (
        [r for r in primary if r.output_nonempty] + [r for r in primary if not r.output_nonempty]
    )[:k]
    index: dict[tuple[str, str, int], EvalRow] = {
        (r.model, r.episode_id, r.turn): r for r in result.rows
    }
    lines: list[str] = []
    for row in chosen:
        lines += [
            f"### Episode `{row.episode_id}`, turn {row.turn} ({row.action_type})",
            "",
            f"Action: {_inline(row.action.replace(chr(10), ' '))}",
            "",
            "Reference:",
            "",
            _fenced(row.reference),
            "",
        ]
        for name in result.models:
            other = index.get((name, row.episode_id, row.turn))
            if other is None:
                continue
            score = other.scores[result.main_metric]
            lines += [
                f"{name} ({result.main_metric} {score:.3f}):",
                "",
                _fenced(other.prediction),
                "",
            ]
    return lines


def _bullet(key: str, value: Any) -> list[str]:
    """``- key: value`` lines; a mapping value gets one indented line per entry, and a mapping
    inside that one ``k v, k v`` line."""
    if not isinstance(value, dict):
        return [f"- {key}: {value}"]
    lines = [f"- {key}:"]
    for k, v in value.items():
        if isinstance(v, dict):
            v = ", ".join(f"{kk} {vv}" for kk, vv in v.items())
        lines.append(f"  - {k}: {v}")
    return lines


def _split_section(result: EvalResult) -> list[str]:
    """Exact match (else the main metric) per split: all steps, non-empty real output, and the
    in-episode consistency subset; then the out-of-distribution non-empty steps by action type."""
    if len(result.splits) < 2 and not result.num_consistency:
        return []
    metric = "exact_match" if "exact_match" in result.metrics else result.main_metric
    lines = [
        f"## In distribution vs out of distribution ({metric})",
        "",
        "Out of distribution: held-out task and command families no training split saw. "
        "Realistic: episodes of whole real command sources (manuals' examples on real files) "
        "held out of training; handwritten (or another evaluation set's name): hand-written "
        "realistic sessions replayed in the real sandbox, never trained on. "
        "In-episode consistency: steps whose real output depends on what earlier steps of the "
        "same episode wrote (files, variables).",
        "",
    ]
    rows = []
    for split, sizes in result.splits.items():
        for label, groups, n in (
            ("all steps", result.by_split, sizes["transitions"]),
            ("non-empty real output", result.by_split_nonempty, sizes["nonempty"]),
            ("in-episode consistency", result.by_split_consistency, sizes["consistency"]),
        ):
            if n:
                rows.append([split, label, str(n)] + [
                    _cell(groups.get(m, {}).get(split, {}).get(metric)) for m in result.models])
    lines += _table(["split", "subset", "n", *result.models], rows)
    by_type = result.by_split_action_type_nonempty.get(result.models[0], {})
    for split in sorted(by_type):
        if split == "in-distribution":
            continue
        lines += [f"### {split}, non-empty real output, by action type ({metric})", ""]
        rows = [
            [t, str(by_type[split][t][metric].n)]
            + [_cell(result.by_split_action_type_nonempty.get(m, {}).get(split, {}).get(t, {})
                     .get(metric), ci=False) for m in result.models]
            for t in sorted(by_type[split])
        ]
        lines += _table(["action type", "n", *result.models], rows)
    return lines


def render_markdown(result: EvalResult, extra: dict[str, Any] | None = None) -> str:
    """The markdown report text (see the module docstring for its sections)."""
    main = result.main_metric
    lines = ["# Fidelity report", ""]
    for key, value in (extra or {}).items():
        if value or value == 0:  # an empty mapping (no timings yet) gets no line
            lines += _bullet(key, value)
    lines += [
        (
            f"- episodes: {result.num_episodes}, transitions: {result.num_transitions}, "
            f"with non-empty real output: {result.num_nonempty}"
        ),
        f"- models: {', '.join(result.models)} (primary: {result.models[0]})",
        f"- cells: mean [95% CI]; CI: {result.ci_method}",
        "",
        "## Overall",
        "",
        *_metric_table(result, result.overall),
        "## Steps with non-empty real output",
        "",
    ]
    if result.num_nonempty:
        lines += _metric_table(result, result.nonempty)
    else:
        lines += ["_(no step has a non-empty real output)_", ""]
    lines += _split_section(result)
    lines += nearest_section(result)
    lines += determinism_section(result)
    lines += [f"## By action type ({main})", ""]
    types = sorted({t for name in result.models for t in result.by_action_type[name]})
    first = result.by_action_type[result.models[0]]
    rows = [
        [t, str(first[t][main].n if t in first else 0)]
        + [_cell(result.by_action_type[n].get(t, {}).get(main), ci=False) for n in result.models]
        for t in types
    ]
    lines += _table(["action type", "n", *result.models], rows)
    policies = sorted(result.by_policy.get(result.models[0], {}))
    if policies:
        lines += [f"## By collecting policy ({main}: all steps / steps with non-empty output)", ""]
        first, first_ne = (
            result.by_policy[result.models[0]],
            result.by_policy_nonempty[result.models[0]],
        )
        rows = [
            [p, f"{first[p][main].n} / {first_ne[p][main].n if p in first_ne else 0}"]
            + [
                f"{_cell(result.by_policy[n].get(p, {}).get(main), ci=False)} / "
                f"{_cell(result.by_policy_nonempty[n].get(p, {}).get(main), ci=False)}"
                for n in result.models
            ]
            for p in policies
        ]
        lines += _table(["policy", "n", *result.models], rows)
    lines += [f"## By turn index ({main})", ""]
    turns = sorted({t for name in result.models for t in result.by_turn[name]})
    rows = [
        [str(t)] + [_cell(result.by_turn[n].get(t, {}).get(main), ci=False) for n in result.models]
        for t in turns
    ]
    lines += _table(["turn", *result.models], rows)
    lines += drift_section(result)
    lines += ["## Examples", "", *_examples(result, NUM_EXAMPLES)]
    return "\n".join(lines).rstrip() + "\n"


def read_loss_curves(logs: Mapping[str, str]) -> dict[str, list[tuple[int, float]]]:
    """``{stage: [(step, loss), ...]}`` from ``{stage: train_log.jsonl URL}``; a missing log,
    or records without ``loss`` (an RL stage logs rewards), give no points."""
    out: dict[str, list[tuple[int, float]]] = {}
    for stage, url in logs.items():
        fs, path = fsspec.core.url_to_fs(url)
        if not fs.exists(path):
            continue
        points = [(int(r["step"]), float(r["loss"])) for _, r in iter_jsonl(url)
                  if "step" in r and isinstance(r.get("loss"), int | float)]  # fmt: skip
        if points:
            out[stage] = points
    return out


def write_report(
    result: EvalResult,
    run_dir: str,
    extra: dict[str, Any] | None = None,
    loss_logs: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Write the report files into ``run_dir`` (an fsspec URL; created if missing).

    Args:
        result: The evaluation result.
        run_dir: Target directory.
        extra: JSON-serialisable run facts (model path, dataset, ...) stored
            under ``"extra"`` in ``metrics.json`` and listed atop ``report.md``.
        loss_logs: ``{stage: train_log.jsonl URL}`` of the stages that trained the model, in
            order; drawn in ``fidelity.png`` (:func:`agentworld.app.figure.render_figure`).

    Returns:
        ``{"metrics": url, "predictions": url, "report": url, "figure": url}``.
    """
    base = run_dir.rstrip("/")
    paths = {
        name: f"{base}/{file}"
        for name, file in (
            ("metrics", "metrics.json"),
            ("predictions", "predictions.jsonl"),
            ("report", "report.md"),
            ("figure", "fidelity.png"),
        )
    }
    metrics = result.model_dump(mode="json", exclude={"rows"})
    metrics["extra"] = extra or {}
    atomic_write(paths["metrics"], json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")
    write_jsonl(paths["predictions"], result.rows)
    atomic_write(paths["report"], render_markdown(result, extra))
    curves = read_loss_curves(loss_logs or {})
    atomic_write(paths["figure"], render_figure(result, curves))
    return paths
