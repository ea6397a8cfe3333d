"""``todo``: a dated to-do list (add, list by date or completion, complete, reschedule, delete).

State: ``DATA/todos.json``, ``{"next_id": n, "todos": [{"id", "title", "due", "priority",
"done"}]}``; dates are ISO ``YYYY-MM-DD``.
Run: ``python -m agentworld.domains.mcp.servers.todo --data DIR``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from agentworld.domains.mcp.servers import jsonstore

FILE = "todos.json"
PRIORITIES = ("low", "normal", "high")


def _date(value: str) -> str:
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError:
        raise ValueError(f"invalid date {value!r}: use YYYY-MM-DD, e.g. 2025-03-14") from None


class TodoStore:
    """The to-dos of one data directory. Errors are ``ValueError`` with a one-line message."""

    def __init__(self, data: Path):
        self.path = Path(data) / FILE

    def _load(self) -> dict[str, Any]:
        return jsonstore.load(self.path, {"next_id": 1, "todos": []})

    def _get(self, state: dict[str, Any], todo_id: int) -> dict[str, Any]:
        for todo in state["todos"]:
            if todo["id"] == todo_id:
                return todo
        ids = ", ".join(str(t["id"]) for t in state["todos"]) or "none"
        raise ValueError(f"no to-do with id {todo_id}; existing ids: {ids}")

    def add_todo(self, title: str, due: str, priority: str = "normal") -> dict[str, Any]:
        """Add a to-do due on a date (YYYY-MM-DD) with priority low, normal or high."""
        if not title.strip():
            raise ValueError("title must be a non-empty string")
        if priority not in PRIORITIES:
            raise ValueError(f"invalid priority {priority!r}; valid: {', '.join(PRIORITIES)}")
        state = self._load()
        todo = {"id": state["next_id"], "title": title, "due": _date(due), "priority": priority,
                "done": False}
        state["todos"].append(todo)
        state["next_id"] += 1
        jsonstore.save(self.path, state)
        return {"added": todo}

    def list_todos(self, due: str | None = None, done: bool | None = None) -> dict[str, Any]:
        """To-dos sorted by due date then id, optionally only those due on a date (YYYY-MM-DD)
        and/or done or not."""
        day = _date(due) if due is not None else None
        todos = sorted(
            (t for t in self._load()["todos"]
             if (day is None or t["due"] == day) and (done is None or t["done"] == done)),
            key=lambda t: (t["due"], t["id"]))
        return {"count": len(todos), "todos": todos}

    def complete_todo(self, id: int) -> dict[str, Any]:  # noqa: A002 - the tool's argument name
        """Mark the to-do with this id as done. Fails if it is already done."""
        state = self._load()
        todo = self._get(state, id)
        if todo["done"]:
            raise ValueError(f"to-do {id} is already done")
        todo["done"] = True
        jsonstore.save(self.path, state)
        return {"completed": todo}

    def reschedule_todo(self, id: int, due: str) -> dict[str, Any]:  # noqa: A002
        """Move the to-do with this id to a new due date (YYYY-MM-DD)."""
        state = self._load()
        todo = self._get(state, id)
        todo["due"] = _date(due)
        jsonstore.save(self.path, state)
        return {"rescheduled": todo}

    def delete_todo(self, id: int) -> dict[str, Any]:  # noqa: A002
        """Delete the to-do with this id."""
        state = self._load()
        todo = self._get(state, id)
        state["todos"].remove(todo)
        jsonstore.save(self.path, state)
        return {"deleted": todo, "remaining": len(state["todos"])}

    def dump(self) -> dict[str, Any]:
        """The whole state: ``{"todos": [todo, ...]}`` by id."""
        return {"todos": self._load()["todos"]}


def main() -> None:
    from agentworld.domains.mcp.servers.sdk import data_dir, serve

    store = TodoStore(data_dir("todo"))
    serve("todo", [store.add_todo, store.list_todos, store.complete_todo, store.reschedule_todo,
                   store.delete_todo])


if __name__ == "__main__":
    main()
