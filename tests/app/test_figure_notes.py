"""Panels that have nothing to draw say why (issue 46): ``drift.png``'s judge panel without
judged rows, and ``fidelity.png``'s loss panel for a stage with one loss record."""

from __future__ import annotations

from agentworld.app.figure import _losses
from agentworld.rewards.bench.scoring import drift_figure


def test_the_judge_panel_without_judged_rows_says_how_to_get_them() -> None:
    rows = [{"domain": "terminal", "task": "terminal", "id": 1, "turn_idx": t, "edit_sim": 0.5}
            for t in (1, 2, 3)]
    fig = drift_figure(rows, {})
    edit, judge = fig.axes
    assert len(edit.get_lines()) == 1 and not judge.get_lines()
    assert any("no judged rows" in t.get_text() for t in judge.texts)
    judged = {("terminal", 1, 1): {"scores": {"a": 5, "b": 5, "c": 5, "d": 5, "e": 5}}}
    assert not drift_figure(rows, judged).axes[1].texts  # judged: a line, no note


def test_a_stage_with_one_loss_record_is_annotated() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    _losses(ax, {"cpt": [(10, 2.5)], "sft": [(5, 1.0), (10, 0.8)]})
    notes = [t.get_text() for t in ax.texts]
    assert notes == ["cpt: one loss record (log_every >= the stage's steps)"]
    plt.close(fig)
