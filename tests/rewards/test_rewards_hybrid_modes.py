"""The hybrid reward's routing: deterministic content gets the rules only, other content the
model-based components too; per-component scores; configuration errors."""

from __future__ import annotations

import pytest
from agentworld.core import plugins
from agentworld.core.hookspecs import hookimpl
from agentworld.core.types import Action, Observation
from agentworld.rewards.hybrid import Hybrid


class LengthRatio:
    """A third-party model-based reward: ``min(|p|, |r|) / max(|p|, |r|)``; records its batches."""

    name = "length_ratio"
    model_based = True

    def __init__(self, wrong_count: bool = False):
        self.batches: list[list[str | None]] = []
        self.wrong_count = wrong_count

    def __call__(self, predictions, references, contexts):
        self.batches.append(list(predictions))
        scores = [
            0.0 if p is None else min(len(p), len(r)) / max(len(p), len(r), 1)
            for p, r in zip(predictions, references, strict=True)
        ]
        return scores + [0.0] if self.wrong_count else scores


class Plugin:
    @hookimpl
    def register_rewards(self, register):
        register("length_ratio", LengthRatio)


@pytest.fixture
def length_ratio():
    plugin = Plugin()
    plugins.load_plugins()
    plugins.pm.register(plugin, name="test-length-ratio")
    plugins.reset_registries()
    try:
        yield
    finally:
        plugins.pm.unregister(plugin)
        plugins.reset_registries()


class KeyValueDomain:
    """``get`` reads a stored value (deterministic); ``draw`` is random (not)."""

    name, version = "kv", "1"

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def score(self, predicted: str, reference: Observation) -> float:
        return 1.0 if predicted == reference.text else 0.0

    def action_type(self, action: Action) -> str:
        return action.text.split()[0]

    def is_deterministic(self, action: Action, reference: Observation) -> bool:
        self.asked.append((action.text, reference.text))
        return action.text.startswith("get ")


def test_deterministic_content_is_scored_by_rules_only(length_ratio) -> None:
    hybrid = Hybrid(weights={"exact_match": 1.0, "line_f1": 1.0, "length_ratio": 2.0})
    domain = KeyValueDomain()
    preds = ["7", "a\nb", "a\nb", None]
    refs = ["8", "a\nc", "a\nb", "x"]
    ctxs = [
        {"domain": domain, "action": "get x"},
        {"domain": domain, "action": Action(text="draw")},
        {"domain": domain, "action": "get y", "reference": Observation(text="a\nb")},
        {},  # no domain: nondeterministic
    ]
    result = hybrid.evaluate(preds, refs, ctxs)
    assert result.deterministic == [True, False, True, False]
    assert domain.asked == [("get x", "8"), ("draw", "a\nc"), ("get y", "a\nb")]
    assert result.components == {
        "exact_match": [0.0, 0.0, 1.0, 0.0],
        "line_f1": [0.0, 0.5, 1.0, 0.0],
        "length_ratio": [None, 1.0, None, 0.0],
    }
    # rules only: (0 + 0) / 2 and (1 + 1) / 2; all: (0 + 0.5 + 2 * 1) / 4
    assert result.scores == [0.0, 0.625, 1.0, 0.0]
    assert hybrid.rewards["length_ratio"].batches == [["a\nb", None]]  # one call, sub-batch
    assert hybrid(preds, refs, ctxs) == result.scores
    assert hybrid.breakdown(preds, refs, ctxs) == result.components


def test_action_types_of_a_registered_domain(length_ratio) -> None:
    """The real terminal domain (by name) says per command whether its output is deterministic
    (``date`` is not), so its hook decides, listed action types or not."""
    hybrid = Hybrid(
        weights={"exact_match": 1.0, "length_ratio": 1.0},
        deterministic_action_types={"terminal": ["pwd", "cd"]},
    )
    prompt = "user@sandbox:~$ "
    preds = [f"/home/agent\n{prompt}", f"a.txt\n{prompt}", f"x\n{prompt}"]
    refs = [f"/home/agent\n{prompt}", f"a.txt b.txt\n{prompt}", f"y\n{prompt}"]
    ctxs = [
        {"domain": "terminal", "action": "pwd"},
        {"domain": "terminal", "action": "date"},
        {"domain": "terminal", "action": "cd /tmp && cat y"},
    ]
    result = hybrid.evaluate(preds, refs, ctxs)
    assert result.deterministic == [True, False, True]
    ratio = len(preds[1]) / len(refs[1])
    assert result.components["length_ratio"] == [None, pytest.approx(ratio), None]
    assert result.scores == [1.0, pytest.approx(ratio / 2), 0.0]
    unlisted = Hybrid(weights={"exact_match": 1.0, "length_ratio": 1.0})
    assert unlisted.evaluate(preds, refs, ctxs).deterministic == [True, False, True]


def test_all_model_based_hybrid_scores_everything(length_ratio) -> None:
    hybrid = Hybrid(weights={"length_ratio": 1.0})
    domain = KeyValueDomain()
    result = hybrid.evaluate(["ab"], ["abcd"], [{"domain": domain, "action": "get k"}])
    assert result.deterministic == [True]
    assert result.components == {"length_ratio": [0.5]} and result.scores == [0.5]


def test_component_with_wrong_count(length_ratio) -> None:
    hybrid = Hybrid(
        weights={"length_ratio": 1.0}, components={"length_ratio": {"wrong_count": True}}
    )
    with pytest.raises(ValueError, match="'length_ratio' returned 3 scores for 2 inputs"):
        hybrid(["a", "b"], ["a", "b"], [{}, {}])


def test_unknown_names_list_installed_rewards() -> None:
    for weights in ({"bleu": 1.0}, {"hybrid": 1.0}):
        with pytest.raises(ValueError) as info:
            Hybrid(weights=weights)
        message = str(info.value)
        assert f"unknown hybrid component(s) {next(iter(weights))!r}" in message
        installed = message.split("installed rewards: ")[1].split(", ")
        assert {"embedding", "llm_judge", "exact_match", "domain"} <= set(installed)
        assert "hybrid" not in installed


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"exact_match": 0.0, "line_f1": 0.0}, "sum to a positive number"),
        ({}, "sum to a positive number"),
        ({"exact_match": -1.0, "line_f1": 2.0}, "'exact_match' must be a finite number >= 0"),
        ({"exact_match": "1"}, "'exact_match' must be a finite number >= 0, got '1'"),
        ({"exact_match": True}, "must be a finite number"),
        ({"exact_match": float("inf")}, "must be a finite number"),
    ],
)
def test_bad_weights(weights: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Hybrid(weights=weights)
