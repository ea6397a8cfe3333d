"""Judge answers: parsing the five 1-5 scores and mapping them to 0-100 and a reward in [0, 1].

Mapping (ours; AgentWorldBench reports its five dimensions on a 0-100 scale):
a score ``s`` in ``[1, 5]`` becomes ``25 * (s - 1)`` in ``[0, 100]`` (the linear map
sending 1 to 0 and 5 to 100), and the reward value is the mean of the five mapped
scores divided by 100.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from enum import Enum

from agentworld.rewards.rubrics import DIMENSIONS

_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_LINE = re.compile(
    r"^\W*(" + "|".join(DIMENSIONS) + r")\W*\s*[:=]\s*\**\s*(\d+(?:\.\d+)?)",
    re.IGNORECASE | re.MULTILINE,
)


def _score(value: object) -> float | None:
    """``value`` as a score in ``[1, 5]``, or ``None`` (booleans, strings, out of range)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and 1.0 <= value <= 5.0 else None


def _complete(found: dict[str, object]) -> dict[str, float] | None:
    scores = {dim: _score(found.get(dim)) for dim in DIMENSIONS}
    if any(v is None for v in scores.values()):
        return None
    return scores  # type: ignore[return-value]


def parse_scores(answer: str) -> dict[str, float] | None:
    """The five dimension scores in a judge answer, or ``None`` when it has none usable.

    Reasoning in ``<think>...</think>`` is ignored. The last JSON object holding all five
    dimensions (keys case-insensitive) with numbers in ``[1, 5]``, at its top level or in a
    ``scores`` object (AgentWorldBench's contract), wins; objects are found by the JSON decoder
    itself, so a brace inside a string (a reason) is only a character. Failing that, lines
    such as ``Factuality: 4`` (one per dimension, the last one of each counts). A score out of
    range, a missing dimension or a non-number makes the answer unparseable: nothing is
    clipped or guessed.

    Returns:
        ``{dimension: score}`` for all of :data:`~agentworld.rewards.rubrics.DIMENSIONS`.
    """
    text = _THINK.sub("", answer)
    for data in reversed(json_objects(text)):
        for candidate in (data, data.get("scores")):
            if isinstance(candidate, dict):
                scores = _complete({str(k).strip().lower(): v for k, v in candidate.items()})
                if scores is not None:
                    return scores
    lines = {name.lower(): float(value) for name, value in _LINE.findall(text)}
    return _complete(dict(lines))


def json_objects(text: str) -> list[dict]:
    """Every JSON object that decodes from some ``{`` of ``text`` (trailing commas forgiven),
    in order of their opening brace; nested objects are listed too."""
    decoder, found = json.JSONDecoder(), []
    start = text.find("{")
    while start != -1:
        for candidate in (text[start:], _TRAILING_COMMA.sub(r"\1", text[start:])):
            try:
                obj, _ = decoder.raw_decode(candidate)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                found.append(obj)
            break
        start = text.find("{", start + 1)
    return found


def to_percent(score: float) -> float:
    """A 1-5 score on the 0-100 scale: ``25 * (score - 1)``."""
    return 25.0 * (score - 1.0)


class VerdictStatus(Enum):
    """What became of one judge request."""

    PARSED = "parsed"  # the answer held the five scores
    UNPARSEABLE = "unparseable"  # the judge answered without usable scores
    REFUSED = "refused"  # the endpoint refused the request (HTTP 400/422, e.g. too long)


@dataclass(slots=True)
class Verdict:
    """The judge's verdict on one prediction.

    Attributes:
        status: :class:`VerdictStatus`.
        answer: The judge's raw answer (the endpoint's error message when refused).
        scores: Dimension -> score in ``[1, 5]``; ``None`` unless parsed.
    """

    status: VerdictStatus
    answer: str
    scores: dict[str, float] | None = None

    @property
    def percent(self) -> dict[str, float] | None:
        """Dimension -> score on 0-100 (:func:`to_percent`); ``None`` unless parsed."""
        if self.scores is None:
            return None
        return {dim: to_percent(s) for dim, s in self.scores.items()}

    @property
    def value(self) -> float | None:
        """Mean of :attr:`percent` over the five dimensions, divided by 100: in ``[0, 1]``."""
        percent = self.percent
        if percent is None:
            return None
        return sum(percent.values()) / (100.0 * len(percent))


def verdict_of(answer: str) -> Verdict:
    """Parse one judge answer into a :class:`Verdict` (``PARSED`` or ``UNPARSEABLE``)."""
    scores = parse_scores(answer)
    status = VerdictStatus.PARSED if scores is not None else VerdictStatus.UNPARSEABLE
    return Verdict(status, answer, scores)
