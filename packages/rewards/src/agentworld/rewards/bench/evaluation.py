"""Parsing a judge's final evaluation robustly.

The answer contract is AgentWorldBench's (``eval/lwm_eval_utils/task_configs.py``): reasoning,
then ``<final_evaluation>`` holding a JSON object with ``strengths``, ``weaknesses`` and
``scores`` (format, factuality, consistency, realism, quality: integers 1-5). Judges stray
from it, so :func:`parse_evaluation` reads, in order: the last ``<final_evaluation>`` block
(to the end when unclosed; the whole answer without one), every JSON object in it decoded by
the JSON decoder itself (so a ``}`` inside a reason string is just a character), preferring
the last object with a ``scores`` object, then the last object holding the dimensions at its
top level; failing that, ``"dimension": N`` pairs. ``<think>`` reasoning is ignored.

A dimension counts when its value is a number (or a string such as ``"4"`` or ``"4/5"``) that
rounds to an integer in 1-5; anything else leaves that dimension out (the public parser
clamps out-of-range values instead; we do not guess).
"""

from __future__ import annotations

import re
from typing import Any

from agentworld.core.answers import strip_think
from agentworld.rewards.rubrics import DIMENSIONS
from agentworld.rewards.verdict import json_objects

_BLOCK_OPEN = re.compile(r"<final_evaluation>", re.IGNORECASE)
_BLOCK_CLOSE = re.compile(r"</final_evaluation>", re.IGNORECASE)
_PAIR = re.compile(r'["\']?(' + "|".join(DIMENSIONS) + r')["\']?\s*[:=]\s*"?(\d+(?:\.\d+)?)',
                   re.IGNORECASE)


def _block(text: str) -> str:
    opens = list(_BLOCK_OPEN.finditer(text))
    if not opens:
        return text
    start = opens[-1].end()
    close = _BLOCK_CLOSE.search(text, start)
    return text[start : close.start() if close else len(text)]


def _score(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.split("/")[0].strip()
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or value != value:
        return None
    score = int(round(value))
    return score if 1 <= score <= 5 else None


def _dims(mapping: dict[str, Any]) -> dict[str, int]:
    lowered = {str(k).strip().lower(): v for k, v in mapping.items()}
    scores = {d: _score(lowered.get(d)) for d in DIMENSIONS}
    return {d: s for d, s in scores.items() if s is not None}


def parse_evaluation(answer: str) -> dict[str, Any] | None:
    """The judge's verdict: ``{"scores": {dim: 1-5}, "strengths": [...], "weaknesses": [...]}``
    with at least one valid dimension, or ``None`` when the answer has none."""
    text = _block(strip_think(answer or ""))
    objects = json_objects(text)
    for obj in reversed(objects):
        if isinstance(obj.get("scores"), dict) and (scores := _dims(obj["scores"])):
            return {"scores": scores, "strengths": _strings(obj.get("strengths")),
                    "weaknesses": _strings(obj.get("weaknesses"))}
    for obj in reversed(objects):
        if scores := _dims(obj):
            return {"scores": scores, "strengths": [], "weaknesses": []}
    pairs = {name.lower(): value for name, value in _PAIR.findall(text)}
    scores = _dims(pairs)
    return {"scores": scores, "strengths": [], "weaknesses": []} if scores else None


def _strings(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    return [value] if isinstance(value, str) and value else []


def sample_score(scores: dict[str, int]) -> float:
    """A sample's score on 0-100: the mean of its valid dimensions ``x``, as ``(x - 1) / 4 * 100``
    (``eval.py``'s ``total_score`` then ``normalize``)."""
    return (sum(scores.values()) / len(scores) - 1) / 4 * 100
