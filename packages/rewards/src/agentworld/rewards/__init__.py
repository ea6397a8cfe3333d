"""agentworld-rewards: rule-based fidelity rewards and their weighted hybrid.

Rewards receive the *parsed* observation as ``predictions[i]`` (``None`` for a
malformed answer, scored 0) and the raw answer in ``contexts[i]["raw"]``
(used by ``format_validity``). See :mod:`agentworld.rewards.rules`.
"""

from agentworld.rewards.hybrid import DEFAULT_WEIGHTS, Hybrid
from agentworld.rewards.rules import (
    DomainScore,
    EditSimilarity,
    ExactMatch,
    FormatValidity,
    LineF1,
    line_f1,
    normalize,
)

__all__ = [
    "DEFAULT_WEIGHTS",
    "DomainScore",
    "EditSimilarity",
    "ExactMatch",
    "FormatValidity",
    "Hybrid",
    "LineF1",
    "line_f1",
    "normalize",
]
