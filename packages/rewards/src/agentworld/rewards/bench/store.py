"""Append-only JSONL results keyed by ``(task, id, turn_idx)``.

Each finished row is one line, flushed at once, so a process killed at any moment loses at
most the line it was writing; reopening drops such a torn last line and the keys already
present are never computed again.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

Key = tuple[str, int, int]


def key_of(record: dict[str, Any]) -> Key:
    return record["task"], record["id"], record["turn_idx"]


class ResultStore:
    """Results of one bench phase in a local JSONL file.

    Args:
        path: The file (created with its parent directory when missing).

    Raises:
        ValueError: a line other than the last is not a JSON result (the file is not ours or
            was edited); the message names the file and line.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.records: dict[Key, dict[str, Any]] = {}
        self.torn = 0
        if self.path.exists():
            self._load()
        self._lock = threading.Lock()
        self._file = self.path.open("a", encoding="utf-8")

    def _load(self) -> None:
        data = self.path.read_bytes()
        complete = data.rfind(b"\n") + 1  # bytes after the last newline: a line cut by a kill
        if complete < len(data):
            self.torn = 1
            with self.path.open("r+b") as f:
                f.truncate(complete)
        for number, raw in enumerate(data[:complete].split(b"\n"), start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
                self.records[key_of(record)] = record
            except (json.JSONDecodeError, KeyError, TypeError):
                raise ValueError(f"{self.path}, line {number}: not a bench result") from None

    def __contains__(self, key: Key) -> bool:
        return key in self.records

    def append(self, record: dict[str, Any]) -> None:
        """Write one result (keys ``task``, ``id``, ``turn_idx`` required) and flush it."""
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()
            self.records[key_of(record)] = record

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
