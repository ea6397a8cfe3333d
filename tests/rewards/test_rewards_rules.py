"""Rule-based rewards on crafted inputs with hand-computed scores."""

from __future__ import annotations

import pytest
from agentworld.core.formats import wrap_observation
from agentworld.core.types import Observation
from agentworld.rewards.rules import (
    DomainScore,
    EditSimilarity,
    ExactMatch,
    FormatValidity,
    LineF1,
    line_f1,
    normalize,
)


def ctx(n: int) -> list[dict]:
    return [{} for _ in range(n)]


def test_normalize_line_endings_and_trailing_whitespace():
    assert normalize("a  \r\nb\t\n\n") == "a\nb"
    assert normalize("  indented") == "  indented"


def test_exact_match():
    preds = ["a \r\nb\n", "a\nb", "A\nb", None, ""]
    refs = ["a\nb", "a\nb ", "a\nb", "a\nb", ""]
    assert ExactMatch()(preds, refs, ctx(5)) == [1.0, 1.0, 0.0, 0.0, 1.0]


def test_edit_similarity_levenshtein_and_indel():
    lev = EditSimilarity()
    assert lev(["kitten"], ["sitting"], ctx(1)) == [pytest.approx(1 - 3 / 7)]
    indel = EditSimilarity(metric="indel")
    assert indel(["kitten"], ["sitting"], ctx(1)) == [pytest.approx(1 - 5 / 13)]
    assert lev(["", "abc", None, "x"], ["", "abc", "abc", ""], ctx(4)) == [1.0, 1.0, 0.0, 0.0]


def test_edit_similarity_bad_metric():
    with pytest.raises(ValueError, match="levenshtein"):
        EditSimilarity(metric="hamming")


def test_line_f1_values():
    assert line_f1("a\nb", "a\nc") == 0.5
    assert line_f1("", "") == 1.0
    assert line_f1("", "a") == 0.0
    # multiset: 2 of the 3 predicted "x" lines match; F1 = 2*2 / (3 + 2)
    assert line_f1("x\nx\nx", "x\nx") == pytest.approx(0.8)
    assert line_f1("a\nb\n", "b\r\na") == 1.0
    assert LineF1()(["a\nb", None], ["a\nc", ""], ctx(2)) == [0.5, 0.0]


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="equal lengths"):
        ExactMatch()(["a"], ["a", "b"], ctx(2))


class CaseDomain:
    """Scores 1 on a case-insensitive match, else 0.25; reads the Observation's state."""

    name, version = "case", "1"

    def score(self, predicted: str, reference: Observation) -> float:
        assert isinstance(reference, Observation)
        bonus = (reference.state or {}).get("bonus", 0.0)
        return (1.0 if predicted.lower() == reference.text.lower() else 0.25) + bonus


def test_domain_score_uses_context_domain_and_reference():
    dom = CaseDomain()
    contexts = [
        {"domain": dom, "reference": Observation(text="HELLO")},
        {"domain": dom, "reference": Observation(text="x")},
        {"domain": dom, "reference": Observation(text="x", state={"bonus": 5.0})},  # clipped to 1
        {"domain": dom},  # reference rebuilt from the text
        {"domain": dom, "reference": Observation(text="x")},
    ]
    preds = ["hello", "y", "y", "ABC", None]
    refs = ["HELLO", "x", "x", "abc", "x"]
    assert DomainScore()(preds, refs, contexts) == [1.0, 0.25, 1.0, 1.0, 0.0]


def test_domain_score_falls_back_to_line_f1_or_default_domain():
    assert DomainScore()(["a\nb"], ["a\nc"], [{"domain": None}]) == [0.5]
    assert DomainScore(domain=CaseDomain())(["y"], ["x"], ctx(1)) == [0.25]


def test_format_validity_on_raw_answers():
    good = "<think>because</think>\n" + wrap_observation("out")
    no_block = "out"
    two = wrap_observation("a") + wrap_observation("b")
    unclosed = "<predicted_observation>\nout"
    raws = [good, no_block, two, unclosed]
    contexts = [{"raw": r} for r in raws]
    assert FormatValidity()(["out", None, None, None], ["out"] * 4, contexts) == [
        1.0,
        0.0,
        0.0,
        0.0,
    ]


def test_format_validity_without_raw_uses_parsed_prediction():
    assert FormatValidity()(["x", None], ["x", "x"], ctx(2)) == [1.0, 0.0]
