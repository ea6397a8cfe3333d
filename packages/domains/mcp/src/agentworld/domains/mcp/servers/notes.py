"""``notes``: a notes store (create, read, update, list, search, delete) keyed by title.

State: ``DATA/notes.json``, ``{"notes": {title: {"title", "body", "tags", "revision"}}}``.
Run: ``python -m agentworld.domains.mcp.servers.notes --data DIR``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentworld.domains.mcp.servers import jsonstore

FILE = "notes.json"


class NotesStore:
    """The notes of one data directory. Every method reads and writes the file, so the state
    survives a server restart. Errors are ``ValueError`` with a one-line message."""

    def __init__(self, data: Path):
        self.path = Path(data) / FILE

    def _load(self) -> dict[str, dict[str, Any]]:
        return jsonstore.load(self.path, {"notes": {}})["notes"]

    def _get(self, notes: dict[str, dict[str, Any]], title: str) -> dict[str, Any]:
        if title not in notes:
            known = ", ".join(sorted(notes)) or "none"
            raise ValueError(f"no note titled {title!r}; existing titles: {known}")
        return notes[title]

    def create_note(self, title: str, body: str, tags: list[str] | None = None) -> dict[str, Any]:
        """Create a note. Fails if a note with this title exists or the title is empty."""
        notes = self._load()
        if not title.strip():
            raise ValueError("title must be a non-empty string")
        if title in notes:
            raise ValueError(f"a note titled {title!r} already exists; use update_note")
        notes[title] = {"title": title, "body": body, "tags": sorted(set(tags or [])),
                        "revision": 1}
        jsonstore.save(self.path, {"notes": notes})
        return {"created": notes[title]}

    def read_note(self, title: str) -> dict[str, Any]:
        """Read the note with this title."""
        return self._get(self._load(), title)

    def update_note(
        self, title: str, body: str | None = None, tags: list[str] | None = None
    ) -> dict[str, Any]:
        """Replace a note's body and/or tags; its revision goes up by one."""
        notes = self._load()
        note = self._get(notes, title)
        if body is None and tags is None:
            raise ValueError("nothing to update: give body and/or tags")
        if body is not None:
            note["body"] = body
        if tags is not None:
            note["tags"] = sorted(set(tags))
        note["revision"] += 1
        jsonstore.save(self.path, {"notes": notes})
        return {"updated": note}

    def delete_note(self, title: str) -> dict[str, Any]:
        """Delete the note with this title."""
        notes = self._load()
        self._get(notes, title)
        del notes[title]
        jsonstore.save(self.path, {"notes": notes})
        return {"deleted": title, "remaining": len(notes)}

    def list_notes(self, tag: str | None = None) -> dict[str, Any]:
        """List note titles and tags, optionally only those with a tag, sorted by title."""
        notes = [{"title": n["title"], "tags": n["tags"]} for _, n in sorted(self._load().items())
                 if tag is None or tag in n["tags"]]
        return {"count": len(notes), "notes": notes}

    def search_notes(self, query: str) -> dict[str, Any]:
        """Notes whose title or body contains the query (case-insensitive), with the body."""
        if not query.strip():
            raise ValueError("query must be a non-empty string")
        q = query.lower()
        hits = [n for _, n in sorted(self._load().items())
                if q in n["title"].lower() or q in n["body"].lower()]
        return {"query": query, "count": len(hits), "matches": hits}

    def dump(self) -> dict[str, Any]:
        """The whole state: ``{"notes": [note, ...]}`` sorted by title."""
        return {"notes": [n for _, n in sorted(self._load().items())]}


def main() -> None:
    from agentworld.domains.mcp.servers.sdk import data_dir, serve

    store = NotesStore(data_dir("notes"))
    serve("notes", [store.create_note, store.read_note, store.update_note, store.delete_note,
                    store.list_notes, store.search_notes])


if __name__ == "__main__":
    main()
