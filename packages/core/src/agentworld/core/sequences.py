"""Order-aware similarity of two sequences (lines of an observation, rows of a board).

The longest common subsequence (LCS) by the textbook dynamic programme (Cormen et al.,
"Introduction to Algorithms", section 15.4), in ``O(len(a) * len(b))`` time and
``O(len(b))`` memory, and the F1 built on it: precision ``LCS/|a|`` and recall ``LCS/|b|``
give ``2 LCS / (|a| + |b|)``. Domain scorers use it on lines so that reordered output
scores below output in the right order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (elements compared by ``==``)."""
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def lcs_f1(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """``2 LCS(a, b) / (|a| + |b|)`` in [0, 1]; 1.0 when both are empty."""
    if not a and not b:
        return 1.0
    return 2 * lcs_length(a, b) / (len(a) + len(b))


def multiset_f1(predicted: Iterable[Hashable], reference: Iterable[Hashable]) -> float:
    """F1 of two multisets (bags): with ``o`` the size of their intersection,
    ``2 o / (|p| + |r|)`` (precision ``o/|p|``, recall ``o/|r|``), in [0, 1]; 1.0 when both
    are empty, 0.0 when exactly one is."""
    p, r = Counter(predicted), Counter(reference)
    total = sum(p.values()) + sum(r.values())
    if total == 0:
        return 1.0
    return 2 * sum((p & r).values()) / total
