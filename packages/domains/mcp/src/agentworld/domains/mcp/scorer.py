"""The mcp fidelity score: field-level F1 over flattened JSON (key path, value) pairs when the
predicted and the real response both parse as JSON, else F1 of normalised lines."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from agentworld.core.sequences import multiset_f1
from agentworld.domains.mcp.calls import unfence
from agentworld.domains.mcp.checks import leaves

MARKER = "**Environment Observation:**"


def _f1(a: Counter[Any], b: Counter[Any]) -> float:
    return multiset_f1(a.elements(), b.elements())


def _fields(text: str) -> Counter[tuple[str, str]] | None:
    try:
        value = json.loads(unfence(text))
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict | list):
        return None
    return Counter((path, json.dumps(leaf, sort_keys=True)) for path, leaf in leaves(value))


def _lines(text: str) -> Counter[str]:
    return Counter(" ".join(line.split()) for line in text.strip().splitlines() if line.strip())


def score(predicted: str, reference: str) -> float:
    """Fidelity in [0, 1] of ``predicted`` against the real response ``reference`` (an
    AgentWorldBench ``**Environment Observation:**`` marker on either is dropped).

    Both JSON objects/arrays (fenced or not): F1 of the multisets of ``(key path, JSON value)``
    leaves (``{"a": {"b": 1}}`` has ``("a.b", "1")``; list items share the path ``a[]``), so key
    order and indentation do not matter. Otherwise: F1 of the multisets of lines with runs of
    white space collapsed. Two empty texts score 1."""
    predicted = predicted.strip().removeprefix(MARKER).strip()
    reference = reference.strip().removeprefix(MARKER).strip()
    a, b = _fields(predicted), _fields(reference)
    if a is not None and b is not None:
        return _f1(a, b)
    return _f1(_lines(predicted), _lines(reference))
