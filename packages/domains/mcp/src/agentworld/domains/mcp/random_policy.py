"""``random``: random calls of a careless but well-meaning agent; 3-10 calls an episode.

The tools come from the initial tool listing, so any server works. Most calls are well formed:
each argument takes, with probability :data:`REUSE`, a value an earlier response showed under
the same key (a title, an id, a table, a column; an error's ``existing titles: ...`` or
``valid: ...`` list counts too, as an agent retries with what the error offered), else a value
its name suggests (a date for ``due``, an operation for ``op``, a lower-case name for
``table``), else a random value of its type. Errors then come from the server itself (a title
that does not exist, a column the table lacks, a to-do already deleted), about 3 in 10 calls
(0.306 of 611 calls in 100 episodes at seed 11, where the earlier policy made 0.73;
``tests/domains/test_mcp_collection.py`` checks 12 episodes). A fraction
``malformed`` (default 0.08) of the calls are broken on purpose: invalid JSON, an unknown
tool, or arguments of the wrong type.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from typing import Any

from agentworld.core.domain_base import PolicyBase
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.mcp.calls import parse_signature, render_call, tool_action
from agentworld.domains.mcp.checks import leaves
from agentworld.domains.mcp.explore.mcp import ExplorerPolicy, is_explorer_task
from agentworld.domains.mcp.tasks import CITIES, PEOPLE, TAGS, TOPICS, WORDS

STRINGS = TOPICS + WORDS + PEOPLE + CITIES + TAGS
REUSE = 0.75
"""Probability that an argument reuses a value shown under its key (when one was shown)."""
HINTS: dict[str, tuple[str, ...]] = {
    "op": ("count", "sum", "avg", "min", "max"),
    "priority": ("low", "normal", "high"),
    "tag": TAGS,
}
_LISTED = re.compile(r"(existing \w+|valid|columns): ([^;\n]+)")
_LIST_KEY = {"existing titles": "title", "existing tables": "table", "existing ids": "id",
             "columns": "column"}


class RandomPolicy(PolicyBase):
    """Random calls (see the module docstring).

    Args:
        seed: Seed; :meth:`reset` re-seeds.
        malformed: Probability that a call is malformed (invalid JSON, an unknown tool or
            arguments of the wrong type).

    Raises:
        ValueError: ``malformed`` is not a probability.
    """

    name = "random"

    def __init__(self, seed: int = 0, malformed: float = 0.08) -> None:
        if not 0.0 <= malformed <= 1.0:
            raise ValueError(f"malformed must be a probability in [0, 1], got {malformed}")
        self.malformed = malformed
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Re-seed; the episode length is drawn at the first step."""
        self.rng = random.Random(f"mcp-random-{seed}")
        self._length = 0
        self._explorer = ExplorerPolicy(0 if seed is None else seed, follow_chain=False)

    def _value(self, tool: str, arg: str, kind: str, seen: dict[str, list[Any]]) -> Any:
        rng = self.rng
        key = _key(arg)
        shown = [v for v in seen.get(key, []) if _fits(v, kind)]
        creates = tool.startswith(("create", "add")) and key in ("table", "title")
        if shown and rng.random() < (1 - REUSE if creates else REUSE):
            return rng.choice(shown)
        if key in HINTS and "string" in kind:
            return rng.choice(HINTS[key])
        if key in ("due", "date") or key.endswith("_date"):
            return f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        if key in ("table", "column") and "string" in kind:
            return rng.choice(list(WORDS) if creates else seen.get(key) or list(WORDS))
        if "integer" in kind:
            return rng.randint(1, 6)
        if "number" in kind:
            return round(rng.uniform(0, 300), 1)
        if "boolean" in kind:
            return rng.random() < 0.5
        if "array" in kind:
            pool = list(WORDS if key == "column" else STRINGS)
            return rng.sample(pool, min(len(pool), rng.randint(1, 3)))
        if "object" in kind:
            columns = [c for c in seen.get("column", []) if c != "id"] or ["name", "city", "amount"]
            return {c: self._scalar(c, seen) for c in rng.sample(columns, min(2, len(columns)))}
        return rng.choice(STRINGS)

    def _scalar(self, column: str, seen: dict[str, list[Any]]) -> Any:
        shown = [v for v in seen.get(column, []) if not isinstance(v, list | dict)]
        if shown and self.rng.random() < REUSE:
            return self.rng.choice(shown)
        return self.rng.choice((self.rng.randint(1, 300), self.rng.choice(STRINGS)))

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """A random call, or ``None`` once the episode's drawn length is reached. On an
        explorer task (a server that is not ours), the explorer's calls in a random order
        (:class:`~agentworld.domains.mcp.explore.mcp.ExplorerPolicy` without its chain), a
        fraction ``malformed`` of them broken."""
        if is_explorer_task(task):
            call = self._explorer.act(task, history)
            if call is not None and self.rng.random() < self.malformed:
                return self._malformed([t for t in map(parse_signature,
                                                        history[0].text.splitlines()) if t])
            return call
        if len(history) <= 1:
            self._length = self.rng.randint(3, 10)
        if sum(isinstance(h, Action) for h in history) >= self._length:
            return None
        tools = [t for t in map(parse_signature, history[0].text.splitlines()) if t is not None]
        rng = self.rng
        if not tools or rng.random() < self.malformed:
            return self._malformed(tools)
        name, args = rng.choice(tools)
        seen = shown_values(history)
        arguments = {arg: self._value(name, arg, kind, seen) for arg, kind, required in args
                     if required or rng.random() < 0.4}
        return tool_action(name, arguments)

    def _malformed(self, tools: list[tuple[str, list[tuple[str, str, bool]]]]) -> Action:
        rng = self.rng
        roll = rng.random()
        if roll < 0.4 or not tools:
            name = rng.choice([t[0] for t in tools] or ["list"])
            return Action(text=rng.choice((f'{{"name": "{name}", "arguments": {{',
                                           f"{name}()", f'{{"tool": "{name}"}}')))
        if roll < 0.7:
            return tool_action(rng.choice(("get_weather", "delete_all", "open_file")), {})
        name, args = rng.choice(tools)
        wrong = {arg: rng.choice(([1, 2], {"x": None}, None, 3.5, "x" * 3)) for arg, _, _ in args}
        return Action(text=render_call(name, wrong), name=name, arguments=wrong)


def _key(arg: str) -> str:
    """The response key an argument name refers to: ``note_id`` -> ``id``, ``columns`` ->
    ``column``, ``tables`` -> ``table``; else the name itself."""
    if arg.endswith("_id"):
        return "id"
    return {"columns": "column", "tables": "table", "titles": "title"}.get(arg, arg)


def _fits(value: Any, kind: str) -> bool:
    if "array" in kind or "object" in kind:
        return False
    if "integer" in kind and type(value) is int:
        return True
    return "string" in kind and type(value) is str


def shown_values(history: Sequence[Observation | Action]) -> dict[str, list[Any]]:
    """Scalars the responses so far showed, by key (the last part of their JSON path; an item
    of a ``tables`` or ``columns`` list counts as a ``table`` or ``column``, a row's keys as
    columns), plus the names an error listed (``existing titles: a, b``; ``valid: x, y`` under
    the tool's ``op``/``priority`` as they apply)."""
    out: dict[str, list[Any]] = {}

    def add(key: str, value: Any) -> None:
        if (type(value) is str and 0 < len(value) <= 40) or type(value) is int:
            out.setdefault(key, []).append(value)

    for item in history[1:]:
        if isinstance(item, Action):
            continue
        try:
            value = json.loads(item.text)
        except json.JSONDecodeError:
            for label, listed in _LISTED.findall(item.text):
                names = [n.strip(" '\"") for n in listed.split(",")]
                key = _LIST_KEY.get(label) or next(
                    (k for k, opts in HINTS.items() if set(names) <= set(opts)), "")
                for name in names:
                    add(key, int(name) if name.isdigit() and key == "id" else name)
            continue
        for path, leaf in leaves(value):
            key = path.rsplit(".", 1)[-1].removesuffix("[]")
            add(_key(key), leaf)
        for row in (r for p, r in _dicts(value) if p.endswith("rows[]")):
            for column in row:
                add("column", column)
    return out


def _dicts(value: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """``(path, object)`` of every JSON object inside ``value`` (list items as ``[]``)."""
    if isinstance(value, dict):
        return [(path, value)] + [p for k, v in value.items()
                                  for p in _dicts(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [p for v in value for p in _dicts(v, f"{path}[]")]
    return []
