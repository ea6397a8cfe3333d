"""agentworld-rewards: rule-based and model-based fidelity rewards and their weighted hybrid.

Rewards receive the *parsed* observation as ``predictions[i]`` (``None`` for a
malformed answer, scored 0) and the raw answer in ``contexts[i]["raw"]``
(used by ``format_validity``). See :mod:`agentworld.rewards.rules`. The
model-based rewards live in :mod:`agentworld.rewards.embedding` (needs the
``embedding`` extra; imported on first use) and :mod:`agentworld.rewards.judge`
(its names below are imported on first access, so importing this package does not
import the ``openai`` client).
"""

from typing import Any

from agentworld.rewards.hybrid import DEFAULT_WEIGHTS, Hybrid, HybridResult
from agentworld.rewards.rules import (
    DomainScore,
    EditSimilarity,
    ExactMatch,
    FormatValidity,
    LineF1,
    line_f1,
    normalize,
)
from agentworld.rewards.verdict import Verdict, VerdictStatus, parse_scores

__all__ = [
    "DEFAULT_WEIGHTS",
    "DomainScore",
    "EditSimilarity",
    "ExactMatch",
    "FormatValidity",
    "Hybrid",
    "HybridResult",
    "JudgeParseError",
    "JudgeStats",
    "JudgeUnavailableError",
    "LLMJudge",
    "LineF1",
    "Verdict",
    "VerdictStatus",
    "line_f1",
    "normalize",
    "parse_scores",
]

_JUDGE = {"JudgeParseError", "JudgeStats", "JudgeUnavailableError", "LLMJudge"}


def __getattr__(name: str) -> Any:
    if name in _JUDGE:
        from agentworld.rewards import judge

        return getattr(judge, name)
    raise AttributeError(f"module 'agentworld.rewards' has no attribute {name!r}")
