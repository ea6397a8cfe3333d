"""``fidelity.png``: the figure a person looks at after an evaluation.

Panels (matplotlib, Agg canvas: no pyplot, no display):

1. every metric per model, over all transitions and over the subset whose real output is
   non-empty (hatched), with 95% confidence intervals;
2. the main metric by turn index with its interval and the number of transitions per turn,
   turns with fewer than :data:`MIN_TURN_N` transitions left out (their intervals span most
   of ``[0, 1]`` and say nothing);
3. the main metric by action type, with intervals and ``n``;
4. the training loss of every stage that ran (``train_log.jsonl`` records), stage after stage;

then, across the figure, the drift panel: exact match (else the main metric) by turn index, one
line per split (line style) and model (colour), turns with fewer than :data:`MIN_DRIFT_N`
transitions of a split left out;

and, when the evaluation has more than one split (in distribution, out of distribution, a
realistic split, any other), a row below with one panel per split: every metric per model,
all transitions and non-empty real output, as panel 1 shows them for the main split.

Intervals are those of :class:`~agentworld.core.evaluate.MetricStat` (Wilson or bootstrap,
:mod:`agentworld.core.intervals`).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from typing import TYPE_CHECKING

from agentworld.core.evaluate import IN_DISTRIBUTION, EvalResult, MetricStat

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MIN_TURN_N = 10
"""Turns with fewer transitions are not drawn in the by-turn panel."""

MIN_DRIFT_N = 3
"""A split's turns with fewer transitions are not drawn in the drift panel."""

SPLIT_COLUMNS = 2
"""Per-split panels to a row (four splits in one row left each panel too narrow to read)."""

LossCurves = Mapping[str, Sequence[tuple[int, float]]]
"""``{stage: [(step, loss), ...]}`` in the order the stages ran."""


def _errs(stats: Sequence[MetricStat]) -> list[list[float]]:
    # max(0, ...): a bootstrap interval's ends can sit a rounding error inside the mean (all scores
    # equal), and matplotlib refuses a negative error bar.
    return [[max(0.0, s.mean - s.ci_low) for s in stats], [max(0.0, s.ci_high - s.mean) for s in stats]]


def _metric_bars(
    ax,
    result: EvalResult,
    colors: list,
    split: str | None = None,
) -> None:
    """Every metric per model over all transitions and over those with non-empty real output
    (hatched): of the main aggregates, or of one ``split`` (``result.by_split*``)."""
    metrics, models = result.metrics, result.models
    if split is None:
        n_all, n_nonempty = result.num_transitions, result.num_nonempty
        all_of, nonempty_of = result.overall, result.nonempty
    else:
        counts = result.splits.get(split, {})
        n_all, n_nonempty = counts.get("transitions", 0), counts.get("nonempty", 0)
        all_of = {m: result.by_split.get(m, {}).get(split, {}) for m in models}
        nonempty_of = {m: result.by_split_nonempty.get(m, {}).get(split, {}) for m in models}
    width = min(0.8 / (2 * len(models)), 0.16)
    for j, name in enumerate(models):
        for k, (group, label, hatch) in enumerate(
            (
                (all_of[name], f"{name}: all (n={n_all})", None),
                (nonempty_of[name], f"{name}: non-empty output (n={n_nonempty})", "//"),
            )
        ):
            if not group or any(m not in group for m in metrics):
                continue
            stats = [group[m] for m in metrics]
            slot = 2 * j + k - (2 * len(models) - 1) / 2
            xs = [i + slot * width for i in range(len(metrics))]
            drawn = ax.bar(xs, [s.mean for s in stats], width, yerr=_errs(stats), capsize=2,
                           color=colors[j], alpha=0.55 if hatch else 0.95, hatch=hatch,
                           edgecolor=colors[j], label=label)  # fmt: skip
            if 2 * len(models) * len(metrics) <= 12:  # more labels than that overlap
                ax.bar_label(drawn, [f"{s.mean:.2f}" for s in stats], fontsize="x-small", padding=2)
    ax.set_xticks(range(len(metrics)), metrics, rotation=15, ha="right")
    ax.set_ylim(0, 1.3)  # room for the legend above the bars
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_ylabel("mean score (95% CI)")
    if split is None:
        ax.set_title("Fidelity by metric: all transitions vs non-empty real output")
    else:
        ax.set_title(f"split: {split} (n={n_all})", fontsize="medium")
    if n_all and split is None:  # a split's panel has the same colours and hatches
        ax.legend(fontsize="x-small", ncol=1 if len(models) < 3 else 2, loc="upper left")
    elif not n_all:
        ax.text(0.5, 0.5, "no transition in this split", ha="center", transform=ax.transAxes)


def ordered_splits(result: EvalResult) -> list[str]:
    """The splits of ``result``: in distribution first, then the others by name."""
    return sorted(result.splits, key=lambda s: (s != IN_DISTRIBUTION, s))


def _by_turn(ax, result: EvalResult, colors: list) -> None:
    main = result.main_metric
    first = result.by_turn.get(result.models[0], {})
    turns = sorted(t for t, group in first.items() if group[main].n >= MIN_TURN_N)
    skipped = len(first) - len(turns)
    for j, name in enumerate(result.models):
        stats = [result.by_turn[name][t][main] for t in turns]
        ax.plot(turns, [s.mean for s in stats], marker="o", ms=3, color=colors[j], label=name)
        ax.fill_between(turns, [s.ci_low for s in stats], [s.ci_high for s in stats],
                        color=colors[j], alpha=0.15)  # fmt: skip
    step = max(1, len(turns) // 12)
    shown = turns[::step]
    ax.set_xticks(shown, [f"{t}\nn={first[t][main].n}" for t in shown], fontsize="x-small")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("turn index (n = transitions)")
    ax.set_ylabel(f"{main} (95% CI band)")
    note = f"; {skipped} turns with n < {MIN_TURN_N} not shown" if skipped else ""
    ax.set_title(f"{main} by turn{note}", fontsize="medium")
    if not turns:
        ax.text(0.5, 0.5, f"no turn has {MIN_TURN_N} transitions", ha="center",
                transform=ax.transAxes)  # fmt: skip
    else:
        ax.legend(fontsize="x-small")


_STYLES = ("-", "--", ":", "-.")


def _drift(ax, result: EvalResult, colors: list) -> None:
    """Exact match (else the main metric) by turn index per split and model (``by_split_turn``)."""
    metric = "exact_match" if "exact_match" in result.metrics else result.main_metric
    drawn = 0
    for i, split in enumerate(ordered_splits(result)):
        for j, name in enumerate(result.models):
            turns = result.by_split_turn.get(name, {}).get(split, {})
            shown = sorted(t for t, g in turns.items() if g[metric].n >= MIN_DRIFT_N)
            if not shown:
                continue
            ax.plot(shown, [turns[t][metric].mean for t in shown], ls=_STYLES[i % len(_STYLES)],
                    marker="o", ms=2.5, lw=1.2, color=colors[j], label=f"{name}, {split}")
            drawn += 1
    ax.set_ylim(0, 1.25)  # room for the legend above the curves
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_xlabel("turn index")
    ax.set_ylabel(metric)
    ax.set_title(f"Drift: {metric} by turn index, per split (colour: model; line style: split; "
                 f"turns with n >= {MIN_DRIFT_N})", fontsize="medium")
    if drawn:
        ax.legend(fontsize="x-small", ncol=min(4, drawn), loc="upper right")
    else:
        ax.text(0.5, 0.5, f"no turn has {MIN_DRIFT_N} transitions", ha="center",
                transform=ax.transAxes)


def _by_type(ax, result: EvalResult, colors: list) -> None:
    main = result.main_metric
    first = result.by_action_type.get(result.models[0], {})
    types = sorted(first, key=lambda t: -first[t][main].n)[:12]
    height = min(0.8 / len(result.models), 0.35)
    for j, name in enumerate(result.models):
        groups = result.by_action_type[name]
        stats = [groups[t][main] for t in types]
        ys = [i + (j - (len(result.models) - 1) / 2) * height for i in range(len(types))]
        ax.barh(ys, [s.mean for s in stats], height, xerr=_errs(stats), capsize=2,
                color=colors[j], label=name)  # fmt: skip
    ax.set_yticks(range(len(types)), [f"{t} (n={first[t][main].n})" for t in types],
                  fontsize="x-small")  # fmt: skip
    ax.invert_yaxis()
    ax.set_xlim(0, 1.05)
    ax.set_xlabel(f"{main} (95% CI)")
    ax.set_title(f"{main} by action type")
    ax.legend(fontsize="x-small", loc="lower right")


def _losses(ax, curves: LossCurves | None) -> None:
    ax.set_title("Training loss of the stages that ran")
    curves = {k: v for k, v in (curves or {}).items() if v}
    if not curves:
        ax.text(0.5, 0.5, "no training log (train_log.jsonl) for this model", ha="center",
                transform=ax.transAxes, fontsize="small")  # fmt: skip
        ax.set_axis_off()
        return
    offset = 0
    for stage, points in curves.items():
        steps = [offset + s for s, _ in points]
        ax.plot(steps, [v for _, v in points], lw=1.2, marker="o" if len(points) < 20 else None,
                ms=3, label=f"{stage} ({len(points)} records)")  # fmt: skip
        if len(points) == 1:  # a lone dot says nothing of a curve: say why there is one
            ax.annotate(f"{stage}: one loss record (log_every >= the stage's steps)",
                        (steps[0], points[0][1]), textcoords="offset points", xytext=(6, 6),
                        fontsize="x-small")
        if offset:
            ax.axvline(offset, color="grey", lw=0.6, ls=":")
        offset = steps[-1]
    ax.set_xlabel("optimizer step (stages one after another)")
    ax.set_ylabel("loss")
    ax.legend(fontsize="x-small")


def build_figure(result: EvalResult, loss_curves: LossCurves | None = None) -> Figure:
    """The matplotlib ``Figure`` of ``fidelity.png`` (Agg canvas): the four panels of the module
    docstring (``axes[0:4]``), the drift panel (``axes[4]``) and below them, when ``result`` has
    more than one split, one panel per split (:func:`ordered_splits`), :data:`SPLIT_COLUMNS` to a
    row (``axes[5:]``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    splits = ordered_splits(result) if len(result.splits) > 1 else []
    rows = -(-len(splits) // SPLIT_COLUMNS)
    fig = Figure(figsize=(14, 13.5 + 4.5 * rows), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    count = 3 if splits else 2
    parts = fig.subfigures(count, 1, height_ratios=[2, 0.9, rows][:count])
    top, middle, bottom = parts[0], parts[1], parts[2] if splits else None
    (bars, turns), (types, losses) = top.subplots(2, 2)
    colors = [f"C{i % 10}" for i in range(len(result.models))]
    _metric_bars(bars, result, colors)
    _by_turn(turns, result, colors)
    _by_type(types, result, colors)
    _losses(losses, loss_curves)
    _drift(middle.subplots(), result, colors)
    if bottom is not None:
        axes = bottom.subplots(rows, SPLIT_COLUMNS, squeeze=False).ravel()
        for ax, split in zip(axes, splits, strict=False):
            _metric_bars(ax, result, colors, split)
        for ax in axes[len(splits):]:
            ax.remove()
    fig.suptitle(f"World-model fidelity: {result.num_transitions} transitions of "
                 f"{result.num_episodes} episodes", fontsize="large")  # fmt: skip
    return fig


def render_figure(result: EvalResult, loss_curves: LossCurves | None = None) -> bytes:
    """``fidelity.png`` as PNG bytes (:func:`build_figure`).

    Args:
        result: The evaluation result.
        loss_curves: ``{stage: [(step, loss), ...]}`` of the stages that trained the model;
            ``None`` or empty: the panel says there is no training log.
    """
    fig = build_figure(result, loss_curves)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
