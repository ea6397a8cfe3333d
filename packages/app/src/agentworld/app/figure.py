"""``fidelity.png``: the figure a person looks at after an evaluation.

Four panels (matplotlib, Agg canvas: no pyplot, no display):

1. every metric per model, over all transitions and over the subset whose real output is
   non-empty (hatched), with 95% confidence intervals;
2. the main metric by turn index with its interval and the number of transitions per turn,
   turns with fewer than :data:`MIN_TURN_N` transitions left out (their intervals span most
   of ``[0, 1]`` and say nothing);
3. the main metric by action type, with intervals and ``n``;
4. the training loss of every stage that ran (``train_log.jsonl`` records), stage after stage.

Intervals are those of :class:`~agentworld.core.evaluate.MetricStat` (Wilson or bootstrap,
:mod:`agentworld.core.intervals`).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from agentworld.core.evaluate import EvalResult, MetricStat

MIN_TURN_N = 10
"""Turns with fewer transitions are not drawn in the by-turn panel."""

LossCurves = Mapping[str, Sequence[tuple[int, float]]]
"""``{stage: [(step, loss), ...]}`` in the order the stages ran."""


def _errs(stats: Sequence[MetricStat]) -> list[list[float]]:
    # max(0, ...): a bootstrap interval's ends can sit a rounding error inside the mean (all scores
    # equal), and matplotlib refuses a negative error bar.
    return [[max(0.0, s.mean - s.ci_low) for s in stats], [max(0.0, s.ci_high - s.mean) for s in stats]]


def _metric_bars(ax, result: EvalResult, colors: list) -> None:
    metrics, models = result.metrics, result.models
    width = min(0.8 / (2 * len(models)), 0.16)
    for j, name in enumerate(models):
        for k, (group, label, hatch) in enumerate(
            (
                (result.overall[name], f"{name}: all (n={result.num_transitions})", None),
                (result.nonempty[name], f"{name}: non-empty output (n={result.num_nonempty})", "//"),
            )
        ):
            if not group:
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
    ax.set_title("Fidelity by metric: all transitions vs non-empty real output")
    ax.legend(fontsize="x-small", ncol=1 if len(models) < 3 else 2, loc="upper left")


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
        if offset:
            ax.axvline(offset, color="grey", lw=0.6, ls=":")
        offset = steps[-1]
    ax.set_xlabel("optimizer step (stages one after another)")
    ax.set_ylabel("loss")
    ax.legend(fontsize="x-small")


def render_figure(result: EvalResult, loss_curves: LossCurves | None = None) -> bytes:
    """``fidelity.png`` as PNG bytes (the four panels of the module docstring).

    Args:
        result: The evaluation result.
        loss_curves: ``{stage: [(step, loss), ...]}`` of the stages that trained the model;
            ``None`` or empty: the panel says there is no training log.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 9.5), dpi=100)
    FigureCanvasAgg(fig)
    (bars, turns), (types, losses) = fig.subplots(2, 2)
    colors = [f"C{i % 10}" for i in range(len(result.models))]
    _metric_bars(bars, result, colors)
    _by_turn(turns, result, colors)
    _by_type(types, result, colors)
    _losses(losses, loss_curves)
    fig.suptitle(f"World-model fidelity: {result.num_transitions} transitions of "
                 f"{result.num_episodes} episodes", fontsize="large")  # fmt: skip
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
