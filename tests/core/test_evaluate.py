"""Fidelity evaluation and report on hand-made episodes with hand-computed scores."""

from __future__ import annotations

import json
import math

import fsspec
import pytest
from agentworld.core import plugins
from agentworld.core.builtins import ConstantWorldModel
from agentworld.core.evaluate import EvalResult, evaluate, stat, transitions
from agentworld.core.formats import sft_pair
from agentworld.app.report import write_report
from agentworld.core.types import Action, Episode, Observation, Prediction, Step

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _episode(
    eid: str, initial: str, steps: list[tuple[str, str]], policy: str | None = None
) -> Episode:
    return Episode(
        id=eid,
        domain="toy",
        system_prompt="A toy shell.",
        initial_observation=Observation(text=initial),
        steps=[Step(action=Action(text=a), observation=Observation(text=o)) for a, o in steps],
        metadata={"policy": policy} if policy else {},
    )


EPISODES = [
    _episode(
        "e1", "start", [("ls", "file.txt"), ("ls -a", "file.txt\n.hidden"), ("touch x", "")],
        policy="scripted",
    ),
    _episode("e2", "hello", [("echo hi", "hi"), ("echo hi", "hi"), ("true", "")], policy="random"),
]


class FirstWord:
    """Minimal domain: action type = first word; output = all but the last line (a prompt)."""

    name, version = "toy", "1"

    def action_type(self, action: Action) -> str:
        return action.text.split()[0]

    def score(self, predicted: str, reference: Observation) -> float:
        return float(predicted == reference.text)


class PromptDomain(FirstWord):
    def output_text(self, observation: Observation) -> str:
        return observation.text.rpartition("\n")[0]

    def empty_observation(self, previous: str) -> str:
        return previous.rpartition("\n")[2]


class Garbage:
    """A world model whose answers never hold an observation block."""

    def predict(self, requests, *, max_new_tokens=None):
        return [Prediction(text="no block here", observation=None) for _ in requests]


@pytest.fixture(scope="module")
def result() -> EvalResult:
    models = {
        "copy": ConstantWorldModel("copy-previous"),
        "empty": ConstantWorldModel("empty"),
        "garbage": Garbage(),
    }
    rewards = {
        name: plugins.get_reward(name) for name in ("line_f1", "exact_match", "format_validity")
    }
    return evaluate(
        models, transitions(EPISODES, FirstWord()), rewards, domain=FirstWord(), batch_size=4
    )


def test_transitions_fields():
    items = transitions(EPISODES)
    assert [(t.episode_id, t.turn) for t in items] == [
        ("e1", 0),
        ("e1", 1),
        ("e1", 2),
        ("e2", 0),
        ("e2", 1),
        ("e2", 2),
    ]
    assert items[4].messages == sft_pair(EPISODES[1], 1)[0]
    assert items[4].reference.text == "hi" and items[4].action.text == "echo hi"
    assert {t.action_type for t in items} == {"other"}
    assert [t.output_nonempty for t in items] == [True, True, False, True, True, False]
    typed = transitions(EPISODES, FirstWord())
    assert [t.action_type for t in typed] == ["ls", "ls", "touch", "echo", "echo", "true"]


def test_output_text_hook_decides_nonempty():
    ep = _episode("p", "$ ", [("cd /", "$ "), ("ls", "bin\n$ ")])
    assert [t.output_nonempty for t in transitions([ep], PromptDomain())] == [False, True]
    assert [t.output_nonempty for t in transitions([ep])] == [True, True]


def test_overall_means(result):
    o = result.overall
    assert o["empty"]["exact_match"].mean == pytest.approx(1 / 3)  # the two empty observations
    assert o["empty"]["line_f1"].mean == pytest.approx(1 / 3)
    assert o["copy"]["exact_match"].mean == pytest.approx(1 / 6)  # e2 turn 1 repeats "hi"
    assert o["copy"]["line_f1"].mean == pytest.approx((2 / 3 + 1) / 6)
    assert o["copy"]["format_validity"].mean == 1.0
    assert all(s.mean == 0.0 for s in o["garbage"].values())
    assert o["copy"]["line_f1"].n == 6
    assert result.num_transitions == 6 and result.num_episodes == 2 and result.num_nonempty == 4
    assert result.models == ["copy", "empty", "garbage"] and result.main_metric == "line_f1"


def test_subsets(result):
    assert result.nonempty["empty"]["exact_match"].mean == 0.0
    assert result.nonempty["copy"]["line_f1"].mean == pytest.approx((2 / 3 + 1) / 4)
    assert result.nonempty["copy"]["line_f1"].n == 4
    types = result.by_action_type["copy"]
    assert types["ls"]["line_f1"].mean == pytest.approx(1 / 3)
    assert types["echo"]["line_f1"].mean == pytest.approx(0.5)
    assert types["touch"]["line_f1"].mean == 0.0
    assert result.by_turn["empty"][2]["exact_match"].mean == 1.0
    assert result.by_turn["empty"][0]["exact_match"].mean == 0.0
    assert result.by_turn["copy"][1]["line_f1"].mean == pytest.approx(5 / 6)


def test_by_collecting_policy(result):
    """Each episode's ``metadata["policy"]`` groups its transitions; unnamed ones are left out."""
    assert set(result.by_policy["copy"]) == {"random", "scripted"}
    assert result.by_policy["empty"]["scripted"]["exact_match"].mean == pytest.approx(1 / 3)
    assert result.by_policy["copy"]["scripted"]["exact_match"].mean == 0.0
    assert result.by_policy["copy"]["random"]["exact_match"].mean == pytest.approx(1 / 3)  # e2 turn 1 repeats "hi"
    assert result.by_policy_nonempty["copy"]["random"]["exact_match"].mean == pytest.approx(1 / 2)
    assert result.by_policy_nonempty["copy"]["random"]["exact_match"].n == 2
    assert result.by_policy_nonempty["empty"]["scripted"]["exact_match"].mean == 0.0
    unnamed = _episode("u", "x", [("ls", "a")])
    bare = evaluate(
        {"empty": ConstantWorldModel("empty")},
        transitions([unnamed]),
        {"exact_match": plugins.get_reward("exact_match")},
    )
    assert bare.by_policy == {"empty": {}} and bare.by_policy_nonempty == {"empty": {}}


def test_confidence_interval(result):
    s = result.overall["empty"]["exact_match"]
    std = math.sqrt((4 * (1 / 3) ** 2 + 2 * (2 / 3) ** 2) / 5)
    assert s.std == pytest.approx(std)
    # 2 of 6 exact: the Wilson score interval (closed form, Wilson 1927), not mean +/- 1.96 s/sqrt(n)
    z, n, p = 1.959963984540054, 6, 1 / 3
    centre, half = (p + z * z / (2 * n)), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert (s.ci_low, s.ci_high) == pytest.approx(
        ((centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n))
    )
    none = stat([0.0] * 40)  # never the degenerate [0, 0]
    assert none.ci_low == 0.0 and none.ci_high == pytest.approx(0.0876, abs=1e-4)
    one = stat([0.5])
    assert (one.ci_low, one.ci_high, one.n) == (0.0, 1.0, 1)
    graded = stat([0.1, 0.2, 0.4, 0.9, 0.5, 0.3])  # non-binary: bootstrap of the mean, seeded
    assert graded.ci_low < graded.mean < graded.ci_high and graded == stat([0.1, 0.2, 0.4, 0.9, 0.5, 0.3])
    with pytest.raises(ValueError):
        stat([])


def test_rows_and_json_roundtrip(result):
    assert len(result.rows) == 18
    row = next(r for r in result.rows if r.model == "copy" and r.episode_id == "e2" and r.turn == 1)
    assert row.prediction == "hi" and row.reference == "hi" and row.scores["exact_match"] == 1.0
    assert EvalResult.model_validate_json(result.model_dump_json()) == result


def test_progress_and_errors():
    calls: list[tuple[int, int]] = []
    items = transitions(EPISODES)
    rewards = {"exact_match": plugins.get_reward("exact_match")}
    evaluate(
        {"empty": ConstantWorldModel("empty")},
        items,
        rewards,
        batch_size=4,
        progress=lambda d, t: calls.append((d, t)),
    )
    assert calls == [(4, 6), (6, 6)]
    with pytest.raises(ValueError, match="main_metric"):
        evaluate({"e": ConstantWorldModel("empty")}, items, rewards, main_metric="bleu")
    with pytest.raises(ValueError, match="batch_size"):
        evaluate({"e": ConstantWorldModel("empty")}, items, rewards, batch_size=0)
    bad = {"bad": lambda p, r, c: [2.0] * len(p)}
    with pytest.raises(ValueError, match="outside"):
        evaluate({"e": ConstantWorldModel("empty")}, items, bad)


def test_write_report_local(result, tmp_path):
    extra = {
        "model": "toy-lwm",
        "facts": {"collect": {"episodes": 4, "workers": 2}, "seed": 0},
        "timings_s": {},  # a standalone eval has no stage timings yet: no line for them
    }
    paths = write_report(result, str(tmp_path / "run"), extra=extra)
    assert set(paths) == {"metrics", "predictions", "report", "figure"}
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["extra"] == extra and "rows" not in metrics
    head = (tmp_path / "run" / "report.md").read_text().split("\n## ")[0]
    assert "- model: toy-lwm\n- facts:\n  - collect: episodes 4, workers 2\n  - seed: 0\n" in head
    assert "timings_s" not in head
    assert metrics["overall"]["empty"]["exact_match"]["mean"] == pytest.approx(1 / 3)
    md = (tmp_path / "run" / "report.md").read_text()
    for heading in (
        "## Overall",
        "## Steps with non-empty real output",
        "## By action type",
        "## By collecting policy",
        "## By turn index",
        "## Examples",
    ):
        assert heading in md
    assert "| exact_match | 0.167 [" in md and "toy-lwm" in md
    assert "| random | 3 / 2 | 0.333 / 0.500 | 0.333 / 0.000 | 0.000 / 0.000 |" in md  # line_f1
    png = (tmp_path / "run" / "fidelity.png").read_bytes()
    assert png.startswith(PNG_MAGIC) and len(png) > 10_000
    lines = (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 18
    assert not [p for p in (tmp_path / "run").iterdir() if ".tmp-" in p.name]


def test_write_report_fsspec_memory(result):
    paths = write_report(result, "memory://reports/r1")
    with fsspec.open(paths["figure"], "rb") as f:
        assert f.read(8) == PNG_MAGIC
    with fsspec.open(paths["metrics"], "r") as f:
        assert json.load(f)["main_metric"] == "line_f1"
