"""``fidelity.png``: the panels a person reads (overall vs non-empty, by turn with n and
intervals from 10 transitions on, by action type, training loss of the stages that ran)."""

from __future__ import annotations

import json
import random
import warnings

from agentworld.core import plugins
from agentworld.core.builtins import ConstantWorldModel
from agentworld.core.evaluate import evaluate, transitions
from agentworld.app.figure import MIN_TURN_N
from agentworld.app.report import read_loss_curves, write_report
from agentworld.core.types import Action, Episode, Observation, Step

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
COMMANDS = ["ls", "echo hi", "cat notes", "pwd", "touch x", "mkdir d"]


def _episodes(n: int, seed: int = 0) -> list[Episode]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        steps = []
        for _ in range(rng.randint(2, 14)):  # late turns are rare: fewer than 10 transitions
            cmd = rng.choice(COMMANDS)
            text = "" if cmd.startswith(("touch", "mkdir")) else rng.choice(["a", "hi", "/home"])
            steps.append(Step(action=Action(text=cmd), observation=Observation(text=text)))
        out.append(Episode(id=f"e{i}", domain="toy", initial_observation=Observation(text=""),
                           steps=steps, metadata={"policy": "scripted"}))  # fmt: skip
    return out


class FirstWord:
    """Action type = the command's first word."""

    name, version = "toy", "1"

    def action_type(self, action: Action) -> str:
        return action.text.split()[0]


def test_report_figure_with_loss_curves(tmp_path):
    items = transitions(_episodes(30), domain=FirstWord())
    result = evaluate(
        {"copy": ConstantWorldModel("copy-previous"), "empty": ConstantWorldModel("empty")},
        items,
        {"exact_match": plugins.get_reward("exact_match")},
        domain=FirstWord(),
    )
    assert set(result.by_action_type["copy"]) == {w.split()[0] for w in COMMANDS}
    logs = {}
    for stage, start in (("cpt", 6.0), ("sft", 3.0)):
        ckpt = tmp_path / stage
        ckpt.mkdir()
        records = [{"step": s, "loss": start / s, "lr": 1e-3} for s in range(1, 41)]
        (ckpt / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        logs[stage] = str(ckpt / "train_log.jsonl")
    logs["rl"] = str(tmp_path / "missing" / "train_log.jsonl")
    curves = read_loss_curves(logs)
    assert list(curves) == ["cpt", "sft"] and curves["sft"][0] == (1, 3.0)
    paths = write_report(result, str(tmp_path / "run"), loss_logs=logs)
    png = (tmp_path / "run" / "fidelity.png").read_bytes()
    assert png.startswith(PNG_MAGIC) and len(png) > 50_000
    assert paths["figure"].endswith("fidelity.png")
    # some turns are below the threshold and some above: the panel drops exactly those
    ns = {t: g["exact_match"].n for t, g in result.by_turn["copy"].items()}
    assert any(n < MIN_TURN_N for n in ns.values()) and any(n >= MIN_TURN_N for n in ns.values())
    # an all-zero proportion has a real interval, never [0, 0]
    empty = result.nonempty["empty"]["exact_match"]
    assert empty.mean == 0.0 and empty.ci_high > 0.0


def test_a_panel_for_every_split():
    """In distribution, out of distribution and any other split (a realistic one) each get a
    panel of their own; a single split adds none."""
    from agentworld.app.figure import build_figure, render_figure
    from agentworld.core.evaluate import IN_DISTRIBUTION, OUT_OF_DISTRIBUTION

    items = [
        *transitions(_episodes(12), domain=FirstWord()),
        *transitions(_episodes(6, seed=1), domain=FirstWord(), split=OUT_OF_DISTRIBUTION),
        *transitions(_episodes(4, seed=2), domain=FirstWord(), split="realistic"),
    ]
    models = {"copy": ConstantWorldModel("copy-previous"), "empty": ConstantWorldModel("empty")}
    rewards = {"exact_match": plugins.get_reward("exact_match")}
    result = evaluate(models, items, rewards, domain=FirstWord())
    n = {split: sum(t.split == split for t in items)
         for split in (IN_DISTRIBUTION, OUT_OF_DISTRIBUTION, "realistic")}  # fmt: skip
    titles = [ax.get_title() for ax in build_figure(result).axes]
    assert titles[4].startswith("Drift: exact_match by turn index")
    assert titles[5:] == [f"split: {split} (n={k})" for split, k in n.items()]
    # the realistic panel's bars are that split's means, all and non-empty, of each model
    realistic = build_figure(result).axes[7]
    heights = sorted(round(bar.get_height(), 6) for bar in realistic.patches)
    assert heights == sorted(
        round(stats[m]["realistic"]["exact_match"].mean, 6)
        for stats in (result.by_split, result.by_split_nonempty)
        for m in models
    )
    assert render_figure(result).startswith(PNG_MAGIC)
    # four splits (as the quickstart has) stay readable: two panels to a row, each wide
    # enough, the layout applied (matplotlib warns when the axes collapse), one legend above
    items.extend(transitions(_episodes(4, seed=3), domain=FirstWord(), split="handwritten"))
    fig = build_figure(evaluate(models, items, rewards, domain=FirstWord()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig.canvas.draw()
    panels = fig.axes[5:]
    assert len(panels) == 4 and all(ax.get_legend() is None for ax in panels)
    assert min(ax.get_window_extent().width for ax in panels) > 0.3 * fig.bbox.width
    single = evaluate(models, transitions(_episodes(12), domain=FirstWord()), rewards,
                      domain=FirstWord())  # fmt: skip
    assert len(build_figure(single).axes) == 5  # four panels and the drift panel
