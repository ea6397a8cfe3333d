"""The hybrid reward and registration through the plugin manager."""

from __future__ import annotations

import pytest
from agentworld.core import plugins
from agentworld.core.protocols import RewardFn
from agentworld.rewards.hybrid import DEFAULT_WEIGHTS, Hybrid

BUILTIN = {"exact_match", "edit_similarity", "line_f1", "domain", "format_validity", "hybrid"}


def test_rewards_registered_by_name():
    assert BUILTIN <= set(plugins.names("reward"))
    assert all(isinstance(plugins.get_reward(n), RewardFn) for n in BUILTIN)
    assert plugins.owner("reward", "line_f1") == "rewards"
    f1 = plugins.get_reward("line_f1")
    assert f1(["a\nb"], ["a\nc"], [{}]) == [0.5]
    indel = plugins.get_reward("edit_similarity", metric="indel")
    assert indel.metric == "indel"


def test_hybrid_weights_are_normalised():
    h = Hybrid(weights={"exact_match": 1, "line_f1": 3})
    assert h.weights == {"exact_match": 0.25, "line_f1": 0.75}
    # exact 0, line F1 0.5 -> 0.75 * 0.5; exact 1, F1 1 -> 1; malformed -> 0
    scores = h(["a\nb", "a", None], ["a\nc", "a", "a"], [{}, {}, {}])
    assert scores == [pytest.approx(0.375), pytest.approx(1.0), 0.0]
    parts = h.breakdown(["a\nb"], ["a\nc"], [{}])
    assert parts == {"exact_match": [0.0], "line_f1": [0.5]}


def test_hybrid_default_and_component_options():
    h = plugins.get_reward("hybrid")
    assert h.weights == pytest.approx(DEFAULT_WEIGHTS)
    h2 = Hybrid(
        weights={"edit_similarity": 2.0, "exact_match": 0.0},
        components={"edit_similarity": {"metric": "indel"}},
    )
    assert list(h2.rewards) == ["edit_similarity"]
    assert h2(["kitten"], ["sitting"], [{}]) == [pytest.approx(8 / 13)]


def test_hybrid_unknown_component_lists_valid_ones():
    with pytest.raises(ValueError) as info:
        Hybrid(weights={"exact_match": 1, "bleu": 1})
    message = str(info.value)
    assert "'bleu'" in message
    for name in BUILTIN - {"hybrid"}:
        assert name in message


@pytest.mark.parametrize(
    "weights", [{"exact_match": -1}, {"exact_match": 0}, {"line_f1": float("nan")}]
)
def test_hybrid_bad_weights(weights):
    with pytest.raises(ValueError, match="weight"):
        Hybrid(weights=weights)


def test_hybrid_options_without_weight():
    with pytest.raises(ValueError, match="no weight"):
        Hybrid(weights={"exact_match": 1}, components={"edit_similarity": {"metric": "indel"}})


class _LengthReward:
    """A third-party reward: 1 when the lengths match, else 0."""

    name = "same_length"

    def __call__(self, predictions, references, contexts):
        return [
            float(p is not None and len(p) == len(r))
            for p, r in zip(predictions, references, strict=True)
        ]


def test_hybrid_mixes_a_third_party_reward():
    from agentworld.core.hookspecs import hookimpl

    class Plugin:
        @hookimpl
        def register_rewards(self, register):
            register("same_length", lambda **o: _LengthReward())

    plugin = Plugin()
    plugins.load_plugins()
    plugins.pm.register(plugin, name="test-same-length")
    plugins.reset_registries()
    try:
        h = Hybrid(weights={"same_length": 1, "exact_match": 1})
        assert h(["abc", "abc"], ["abc", "xyz"], [{}, {}]) == [1.0, 0.5]
    finally:
        plugins.pm.unregister(plugin)
        plugins.reset_registries()
    assert "same_length" not in plugins.names("reward")
