"""Fidelity of a predicted swe observation, on the structure of the real one.

The reference's form decides the measure (each in [0, 1]; an exact match scores 1):

* a test log (unittest lines ``TEST_ID ... ok|FAIL|ERROR``, :func:`testlog.outcomes`): the
  share of tests, over the union of both logs' test ids, with the same outcome in both;
* a unified diff (lines starting ``@@``: an edit's result, ``git diff``, a submission): the
  mean of the F1 of the hunk headers and the F1 of the changed (``+``/``-``) lines;
* anything else (file views, listings, command output, errors): the F1 of the lines as
  multisets (trailing spaces dropped, empty lines kept out).
"""

from __future__ import annotations

from collections import Counter

from agentworld.core.answers import clean_reference
from agentworld.core.types import Observation
from agentworld.domains.swe import testlog


def _f1(predicted: list[str], reference: list[str]) -> float:
    a, b = Counter(predicted), Counter(reference)
    if not a and not b:
        return 1.0
    common = sum((a & b).values())
    if common == 0:
        return 0.0
    p, r = common / sum(a.values()), common / sum(b.values())
    return 2 * p * r / (p + r)


def line_f1(predicted: str, reference: str) -> float:
    """F1 of the non-empty lines (trailing spaces dropped) of the two texts."""
    def lines(text: str) -> list[str]:
        return [x.rstrip() for x in text.splitlines() if x.strip()]

    return _f1(lines(predicted), lines(reference))


def outcome_agreement(predicted: dict[str, bool], reference: dict[str, bool]) -> float:
    """Share of test ids (union of both) with the same outcome in both logs."""
    names = set(predicted) | set(reference)
    if not names:
        return 1.0
    return sum(n in predicted and n in reference and predicted[n] == reference[n]
               for n in names) / len(names)


def hunks_score(predicted: str, reference: str) -> float:
    """Mean of the F1 of the ``@@`` hunk headers and of the changed lines."""
    def parts(text: str) -> tuple[list[str], list[str]]:
        lines = text.splitlines()
        heads = [x for x in lines if x.startswith("@@")]
        changed = [x.rstrip() for x in lines if x[:1] in "+-" and not x.startswith(("+++", "---"))]
        return heads, changed

    (ph, pc), (rh, rc) = parts(predicted), parts(reference)
    return (_f1(ph, rh) + _f1(pc, rc)) / 2


def score(predicted: str, reference: Observation | str) -> float:
    """Fidelity in [0, 1] of ``predicted`` against the real observation ``reference`` (its
    ``**Environment Observation:**`` marker removed), by the reference's form (module doc)."""
    real = clean_reference(reference if isinstance(reference, str) else reference.text).strip()
    guess = predicted.strip()
    if guess == real:
        return 1.0
    tests = testlog.outcomes(real)
    if tests:
        return outcome_agreement(testlog.outcomes(guess), tests)
    if any(line.startswith("@@") for line in real.splitlines()):
        return hunks_score(guess, real)
    return line_f1(guess, real)
