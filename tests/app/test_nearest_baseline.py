"""The retrieval-only baseline ``nearest`` and what every report shows beside it: a real eval of
real terminal episodes (no training: the ``copy-previous`` backend is the "model") with the
``empty`` and ``nearest`` baselines; the report's nearest-neighbour verdict per split, its
deterministic split and drift table; the figure's drift panel."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from rich.console import Console
from terminal_scripts import script_episodes

from agentworld.app.config import EvalConfig
from agentworld.app.figure import MIN_DRIFT_N, build_figure
from agentworld.app.pipeline import RunState, run_eval
from agentworld.core import plugins
from agentworld.core.evaluate import DETERMINISTIC, IN_DISTRIBUTION, NONDETERMINISTIC, EvalResult
from agentworld.core.io import write_episodes
from agentworld.core.types import Episode
from agentworld.domains.terminal.domain import TerminalDomain

# the same script in every episode, so actions recur after the same observation; the
# nanosecond clock is the one answer no retrieval (and no simulator) can get right
SCRIPT = ["pwd", "echo hi", "ls", "date +%s%N", "mkdir d", "cd d", "pwd"]


def _collect(seeds: list[int], prefix: str) -> list[Episode]:
    return script_episodes(SCRIPT, seeds, prefix)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A run directory with real training and held-out episodes (overlapping task seeds)."""
    root = tmp_path_factory.mktemp("nearest")
    train, heldout = _collect([0, 0, 1], "train"), _collect([0, 1, 0], "heldout")
    write_episodes(str(root / "train.jsonl"), train)
    write_episodes(str(root / "heldout.jsonl"), heldout)
    return root, train, heldout


def _eval(root, out: str, train_url: str) -> tuple[dict, str, EvalResult]:
    state = RunState(dir=str(root / out), seed=0, domain="terminal",
                     heldout_url=str(root / "heldout.jsonl"))
    state.train_url = train_url
    cfg = EvalConfig(backend="copy-previous", model="none", baselines=["empty", "nearest"],
                     rewards=["exact_match", "edit_similarity"], ood_max_transitions=0,
                     realistic_max_transitions=0)
    run_eval(cfg, state, Console(file=open(root / f"{out}.txt", "w"), width=160))
    metrics = json.loads((root / out / "metrics.json").read_text())
    return metrics, (root / out / "report.md").read_text(), state.eval_result


def test_nearest_answers_real_training_observations(run):
    root, train, heldout = run
    domain = TerminalDomain()
    model = plugins.get_sim_backend("nearest").load(None, domain=domain,
                                                    train_data=str(root / "train.jsonl"))
    from agentworld.core.evaluate import transitions

    items = transitions(heldout, domain=domain)
    predictions = model.predict([t.messages for t in items])
    seen = {s.observation.text for e in train for s in e.steps}
    assert all(p.observation in seen for p in predictions)  # unmodified real observations
    # what it should answer: the observation seen most often after the same action and
    # previous observation in training (the first seen on a tie), computed here by hand
    after: dict[tuple[str, str], Counter] = {}
    for e in train:
        for prev, step in zip(e.observations(), e.steps):
            after.setdefault((step.action.text, prev.text), Counter())[step.observation.text] += 1
    by_action: dict[str, set[str]] = {}
    for e in train:
        for step in e.steps:
            by_action.setdefault(step.action.text, set()).add(step.observation.text)
    expected = []
    for e in heldout:
        for prev, t in zip(e.observations(), e.steps):
            if (t.action.text, prev.text) in after:
                expected.append(after[(t.action.text, prev.text)].most_common(1)[0][0])
            else:  # after the clock's answer: BM25 finds the same command, one answer in training
                [only] = by_action[t.action.text]
                expected.append(only)
    assert [p.observation for p in predictions] == expected
    # an action never seen after that observation falls back to BM25: the same command
    [p] = model.predict([[{"role": "system", "content": "Initial observation:\nuser@sandbox:~/x$ "},
                          {"role": "user", "content": "echo hi"}]])
    assert p.observation == "hi\nuser@sandbox:~$ "
    with pytest.raises(ValueError, match="train_data"):
        plugins.get_sim_backend("nearest").load(None, domain=domain)


def test_report_says_whether_the_model_beats_the_nearest_neighbour(run):
    root, train, heldout = run
    metrics, report, result = _eval(root, "with", str(root / "train.jsonl"))
    assert result.models == ["model", "empty", "nearest"]
    em = {m: metrics["by_split"][m][IN_DISTRIBUTION]["exact_match"]["mean"] for m in result.models}
    n = len(SCRIPT) * len(heldout)
    # empty (the same prompt, nothing printed) is right on mkdir only, cd changes the prompt;
    # nearest on every deterministic step whose answer training saw after the same observation
    assert em["empty"] == pytest.approx(len(heldout) / n)
    assert em["nearest"] > em["empty"] and em["nearest"] > em["model"]
    es = {m: metrics["by_split"][m][IN_DISTRIBUTION]["edit_similarity"]["mean"]
          for m in ("model", "nearest")}
    assert (f"- the trained model does not beat the nearest real transition on split "
            f"in-distribution (exact match {em['model']:.3f} vs {em['nearest']:.3f}; "
            f"edit similarity {es['model']:.3f} vs {es['nearest']:.3f}; n={n})") in report
    assert metrics["extra"]["facts"]["eval"]["retrieval_index"] == str(root / "train.jsonl")
    # the deterministic split: the clock step is the only nondeterministic one, and no
    # retrieval is exact on it
    assert metrics["splits"][IN_DISTRIBUTION]["nondeterministic"] == len(heldout)
    assert metrics["splits"][IN_DISTRIBUTION]["deterministic"] == n - len(heldout)
    det = metrics["by_split_determinism"]["nearest"][IN_DISTRIBUTION]
    assert det[NONDETERMINISTIC]["exact_match"]["mean"] == 0.0
    assert det[DETERMINISTIC]["exact_match"]["mean"] == pytest.approx(em["nearest"] * n / (n - len(heldout)))
    assert "## Deterministic vs nondeterministic real answers (exact_match)" in report
    assert f"| in-distribution | nondeterministic | {len(heldout)} |" in report
    # drift: every turn of every split, in the table and as a curve
    assert "## Drift: exact_match by turn index, per split" in report
    assert f"| in-distribution | {len(SCRIPT) - 1} | {len(heldout)} |" in report
    assert (root / "with" / "fidelity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fig = build_figure(result)
    assert len(fig.axes) == 5  # one split: the four panels and the drift panel
    drift = fig.axes[4]
    assert drift.get_title().startswith("Drift: exact_match by turn index")
    assert len(heldout) >= MIN_DRIFT_N
    lines = {line.get_label(): list(line.get_ydata()) for line in drift.get_lines()}
    assert set(lines) == {f"{m}, {IN_DISTRIBUTION}" for m in result.models}
    turn_means = [metrics["by_split_turn"]["nearest"][IN_DISTRIBUTION][str(t)]["exact_match"]["mean"]
                  for t in range(len(SCRIPT))]
    assert lines[f"nearest, {IN_DISTRIBUTION}"] == pytest.approx(turn_means)
    assert turn_means[SCRIPT.index("date +%s%N")] == 0.0


def test_without_training_data_nearest_is_left_out_with_a_note(run):
    root, _, _ = run
    metrics, report, result = _eval(root, "without", "")
    assert result.models == ["model", "empty"]
    assert "nearest: no training episodes given" in metrics["extra"]["facts"]["eval"]["baselines_left_out"]
    assert "_The retrieval-only baseline `nearest` did not run" in report
