"""``scripted``: an expert that solves every task kind with correct tool calls, reading the
real responses (ids from listings, bodies from reads), plus some realistic exploration calls
(a listing or search first, a read before a change)."""

from __future__ import annotations

import json
import random
from collections.abc import Generator, Sequence
from typing import Any

from agentworld.core.domain_base import PolicyBase
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.mcp.calls import tool_action
from agentworld.domains.mcp.explore.mcp import ExplorerPolicy, is_explorer_task

Plan = Generator[tuple[str, dict[str, Any]], str, None]


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {}


def _todo_id(text: str, title: str) -> int:
    """The id of the to-do titled ``title`` in a ``list_todos`` response (0 when absent)."""
    todos = _json(text).get("todos", []) if isinstance(_json(text), dict) else []
    return next((t["id"] for t in todos if t.get("title") == title), 0)


def _notes(kind: str, p: dict[str, Any], rng: random.Random) -> Plan:
    if kind == "create":
        if rng.random() < 0.5:
            yield "list_notes", {}
        yield "create_note", {"title": p["title"], "body": p["body"], "tags": p["tags"]}
    elif kind == "lookup":
        if rng.random() < 0.5:
            yield "search_notes", {"query": p["title"].split("-")[0]}
        yield "read_note", {"title": p["title"]}
    elif kind == "update":
        if rng.random() < 0.6:
            yield "read_note", {"title": p["title"]}
        yield "update_note", {"title": p["title"], "body": p["body"]}
    elif kind == "aggregate":
        if rng.random() < 0.5:
            yield "list_notes", {}
        yield "list_notes", {"tag": p["tag"]}
    else:
        note = _json((yield "read_note", {"title": p["old"]}))
        yield "create_note", {"title": p["new"], "body": note.get("body", ""),
                              "tags": note.get("tags", [])}
        yield "delete_note", {"title": p["old"]}


def _todo(kind: str, p: dict[str, Any], rng: random.Random) -> Plan:
    if kind == "create":
        if rng.random() < 0.5:
            yield "list_todos", {"done": False}
        yield "add_todo", {"title": p["title"], "due": p["due"], "priority": p["priority"]}
    elif kind == "lookup":
        yield "list_todos", {}
    elif kind == "update":
        listed = yield "list_todos", {"done": False}
        yield "complete_todo", {"id": _todo_id(listed, p["title"])}
    elif kind == "aggregate":
        if rng.random() < 0.5:
            yield "list_todos", {"done": False}
        yield "list_todos", {"due": p["due"]}
    else:
        listed = yield "list_todos", {}
        yield "reschedule_todo", {"id": _todo_id(listed, p["title"]), "due": p["due"]}
        yield "add_todo", {"title": p["extra"], "due": p["due"], "priority": "low"}


def _records(kind: str, p: dict[str, Any], rng: random.Random) -> Plan:
    if kind == "create":
        if rng.random() < 0.5:
            yield "list_tables", {}
        yield "insert_row", {"table": "orders", "row": p["row"]}
    elif kind == "lookup":
        if rng.random() < 0.4:
            yield "list_tables", {}
        yield "query_rows", {"table": "orders", "where": {"customer": p["customer"]}, "limit": 1}
    elif kind == "update":
        if rng.random() < 0.6:
            yield "query_rows", {"table": "orders", "where": {"customer": p["customer"]}}
        yield "update_rows", {"table": "orders", "where": {"customer": p["customer"]},
                              "values": {"status": "cancelled"}}
    elif kind == "aggregate":
        if rng.random() < 0.5:
            yield "query_rows", {"table": "orders", "where": {"customer": p["customer"]}}
        yield "aggregate", {"table": "orders", "column": "amount", "op": "sum",
                            "where": {"customer": p["customer"]}}
    else:
        yield "create_table", {"table": "customers", "columns": ["name", "city"]}
        yield "insert_row", {"table": "customers", "row": {"name": p["customer"], "city": p["city"]}}
        yield "insert_row", {"table": "orders", "row": {
            "customer": p["customer"], "city": p["city"], "amount": 50, "status": "open"}}


PLANS = {"notes": _notes, "todo": _todo, "records": _records}


class ScriptedExpert(PolicyBase):
    """The expert (see the module docstring); 1-3 calls per task. An explorer task (a server
    that is not ours) it plays as :class:`~agentworld.domains.mcp.explore.mcp.ExplorerPolicy`
    does, its chain first; without a task it stops.

    Args:
        seed: Seed of the exploration choices; :meth:`reset` re-seeds.
    """

    name = "scripted"

    def __init__(self, seed: int = 0) -> None:
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Re-seed and forget the current plan."""
        self.rng = random.Random(f"mcp-scripted-{seed}")
        self._plan: Plan | None = None
        self._explorer = ExplorerPolicy(0 if seed is None else seed, follow_chain=True)

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The next call of the plan for ``task`` (a new plan at the episode's first step),
        ``None`` when the plan is done or there is no task of ours."""
        if is_explorer_task(task):
            return self._explorer.act(task, history)
        if task is None or task.setup.get("server") not in PLANS:
            return None
        try:
            if len(history) <= 1 or self._plan is None:
                self._plan = PLANS[task.setup["server"]](task.kind, task.setup["params"], self.rng)
                name, arguments = next(self._plan)
            else:
                name, arguments = self._plan.send(history[-1].text)  # type: ignore[union-attr]
        except StopIteration:
            self._plan = None
            return None
        return tool_action(name, arguments)
