"""Fidelity of a predicted search observation, on the structure of the real one.

The reference's form decides the measure (each in [0, 1]; an exact match scores 1):

* a result list (``[i] URL`` / ``Title:`` lines, :func:`result_list`): the mean of the F1 of
  the predicted URLs against the real ones, the F1 of the titles, and the fraction of real
  ranks whose URL the prediction has at the same rank;
* a JSON object (``dict_memory`` ``retrieve``/``retrieve_all``): the share of keys, over the
  union of both objects' keys, whose values are equal (a prediction that is not an object
  scores 0);
* anything else (page text, messages, errors): the F1 of the normalised lines (lower-cased,
  inner spaces collapsed, empty lines dropped) as multisets.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentworld.core.answers import clean_reference
from agentworld.core.sequences import multiset_f1
from agentworld.core.types import Observation

_RESULT = re.compile(r"^\[\d+\] (\S+)\s*\nTitle: (.*)$", re.MULTILINE)


def result_list(text: str) -> list[tuple[str, str]]:
    """``(url, title)`` of each numbered result in ``text``, in order (``[]``: not a list)."""
    return [(u.strip(), t.strip()) for u, t in _RESULT.findall(text)]


def line_f1(predicted: str, reference: str) -> float:
    """F1 of the normalised lines of the two texts (two empty texts score 1)."""
    def lines(text: str) -> list[str]:
        return [" ".join(x.lower().split()) for x in text.splitlines() if x.strip()]

    return multiset_f1(lines(predicted), lines(reference))


def results_score(predicted: list[tuple[str, str]], reference: list[tuple[str, str]]) -> float:
    """Mean of URL F1, title F1 and same-rank URL agreement (over the real ranks)."""
    urls = multiset_f1([u for u, _ in predicted], [u for u, _ in reference])
    titles = multiset_f1([t for _, t in predicted], [t for _, t in reference])
    ranked = sum(i < len(predicted) and predicted[i][0] == u for i, (u, _) in enumerate(reference))
    return (urls + titles + ranked / max(len(reference), 1)) / 3


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def field_match(predicted: dict[str, Any], reference: dict[str, Any]) -> float:
    """Share of keys (union of both) whose values are equal; two empty objects score 1."""
    keys = set(predicted) | set(reference)
    if not keys:
        return 1.0
    return sum(k in predicted and k in reference and predicted[k] == reference[k]
               for k in keys) / len(keys)


def score(predicted: str, reference: Observation | str) -> float:
    """Fidelity in [0, 1] of ``predicted`` against the real observation ``reference`` (its
    ``**Environment Observation:**`` marker removed), by the reference's form (module doc)."""
    real = clean_reference(reference if isinstance(reference, str) else reference.text)
    guess = predicted.strip()
    if guess == real:
        return 1.0
    ranked = result_list(real)
    if ranked:
        return results_score(result_list(guess), ranked)
    obj = _json_object(real)
    if obj is not None:
        mine = _json_object(guess)
        return field_match(mine, obj) if mine is not None else 0.0
    return line_f1(guess, real)
