"""Domain fidelity score of a predicted classic observation.

Both texts are split into a header (an optional ``invalid action:`` line and the
position line), the map
(as many lines as the variant's map has) and the remaining info lines
(passenger, reward, status). With ``cells`` the fraction of map characters
that agree position by position (over the longer of each pair of rows, so
missing or extra characters count as wrong) and ``lines`` the order-aware
F1 of the header and info lines (``2 LCS / (p + r)``)::

    score = 0.7 * cells + 0.3 * lines          at most 0.99 unless the texts are equal

An exact text match, and only that, scores 1.0; an empty prediction scores 0.
"""

from __future__ import annotations

from agentworld.core.sequences import lcs_f1
from agentworld.core.types import Observation
from agentworld.domains.classic.variants import Variant

W_CELLS, W_LINES = 0.7, 0.3
INEXACT_MAX = 0.99


def split(text: str, height: int) -> tuple[list[str], list[str]]:
    """``(map rows, header and info lines)`` of an observation text; ``height`` map rows."""
    lines = text.split("\n")
    head = [lines.pop(0)] if lines and lines[0].startswith("invalid action:") else []
    if lines and lines[0].startswith(("agent: ", "taxi: ")):
        head.append(lines.pop(0))
    return lines[:height], head + lines[height:]


def cell_accuracy(predicted: list[str], reference: list[str]) -> float:
    """Fraction of reference map cells the predicted rows reproduce, in [0, 1]."""
    total = correct = 0
    for i, ref in enumerate(reference):
        pred = predicted[i] if i < len(predicted) else ""
        total += max(len(ref), len(pred))
        correct += sum(a == b for a, b in zip(pred, ref))
    return correct / total if total else 1.0


def score(variant: Variant, predicted: str, reference: Observation | str) -> float:
    """Fidelity of ``predicted`` to the real observation, in [0, 1] (formula above)."""
    from agentworld.domains.classic.render import base_map

    ref_text = reference.text if isinstance(reference, Observation) else reference
    if predicted == ref_text:
        return 1.0
    height = len(base_map(variant))
    grid_p, info_p = split(predicted, height)
    grid_r, info_r = split(ref_text, height)
    info_p = [line for line in info_p if line]
    info_r = [line for line in info_r if line]
    lines = lcs_f1(info_p, info_r)
    return min(INEXACT_MAX, W_CELLS * cell_accuracy(grid_p, grid_r) + W_LINES * lines)
