"""Task checks: conditions on a server's dumped state (``privileged_state()["data"]``) or on the
last tool response (the agent's answer read from the real server).

A check is ``{"all": [condition, ...]}``; a condition is one of

* ``{"has": {"path": P, "fields": {...}}}``: some item of the list at ``P`` has every field
  equal (``P`` is dotted: ``"notes"``, ``"todos"``, ``"tables.orders"``);
* ``{"lacks": {"path": P, "fields": {...}}}``: no item does;
* ``{"answer": V, "key": K}``: the last response shows ``V`` (a JSON value equal to it under a
  key named ``K`` when given, numbers within 1e-6; for text responses, ``V`` as a whole word).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

CONDITIONS = ("has", "lacks", "answer")


def leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """``(dotted key path, scalar)`` of every leaf of a JSON value (list items as ``[]``)."""
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in leaves(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [pair for v in value for pair in leaves(v, f"{path}[]")]
    return [(path, value)]


def equal(a: Any, b: Any) -> bool:
    """JSON values equal as the checks compare them (numbers within 1e-6, booleans only to
    booleans)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
    return a == b


def shows(text: str, value: Any, key: str | None = None) -> bool:
    """Whether a response text shows ``value`` (under a key named ``key``; see the module
    docstring)."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return re.search(rf"(?<!\w){re.escape(str(value))}(?!\w)", text) is not None
    return any(equal(leaf, value) for path, leaf in leaves(parsed)
               if key is None or path.removesuffix("[]").rsplit(".", 1)[-1] == key)


def _items(data: dict[str, Any], path: str) -> list[dict[str, Any]]:
    node: Any = data
    for key in path.split("."):
        node = node.get(key, []) if isinstance(node, dict) else []
    return [x for x in node if isinstance(x, dict)] if isinstance(node, list) else []


def _has(data: dict[str, Any], spec: dict[str, Any]) -> bool:
    return any(all(equal(item.get(k), v) for k, v in spec["fields"].items())
               for item in _items(data, spec["path"]))


def holds(check: dict[str, Any], data: dict[str, Any] | None, last_text: str) -> bool:
    """Whether every condition of ``check`` holds on ``data`` and ``last_text``; an empty
    check never holds (free play).

    Raises:
        ValueError: a condition is none of :data:`CONDITIONS`.
    """
    conditions = check.get("all") or []
    result = bool(conditions)
    for cond in conditions:
        if "has" in cond:
            result &= data is not None and _has(data, cond["has"])
        elif "lacks" in cond:
            result &= data is not None and not _has(data, cond["lacks"])
        elif "answer" in cond:
            result &= shows(last_text, cond["answer"], cond.get("key"))
        else:
            raise ValueError(f"unknown check condition {sorted(cond)}; valid: {CONDITIONS}")
    return result
