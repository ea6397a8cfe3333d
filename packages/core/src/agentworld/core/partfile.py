"""The part file of a collection in progress: finished episodes, appended one by one.

A collection killed half-way (even by SIGKILL) keeps every episode it finished: each one
is appended to ``<out>.part`` as one JSON line, flushed and ``fsync``-ed, and a rerun
with the same settings reads them back and collects only the rest. The data set itself
is still written atomically at the end, after which the part file is removed.

Layout (JSON Lines): a header ``{"agentworld_part": 1, "settings": {...}}``, then one
``{"index": i, "episode": {...}}`` per finished episode, in finishing order. A torn last
line (the process died while writing it) is dropped on reading.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentworld.core.escapes import json_line
from agentworld.core.types import Episode

VERSION = 1


class PartFileError(ValueError):
    """A part file that cannot be resumed: other settings, or a damaged line."""


class PartFile:
    """Append-only store of the episodes a collection has finished (module docstring).

    Args:
        path: Local path of the part file.
        settings: What decides the episodes (domain, count, seed, policies, ...): a part
            file written with other settings is refused, not mixed in.
    """

    def __init__(self, path: str | os.PathLike[str], settings: dict[str, Any]):
        self.path = Path(path)
        self.settings = json.loads(json.dumps(settings))  # as it reads back
        self.appended = 0  # episodes appended since open()
        self._lock = threading.Lock()
        self._file: Any = None

    def open(self) -> dict[int, Episode]:
        """Read the episodes already finished (``{index: episode}``), then open for appending.

        Creates the file (and its parent directories) when missing, so an unwritable
        location fails here, before any episode runs. A file holding only a header (no
        finished episode), whatever its settings, is started over.

        Raises:
            PartFileError: the file was written with other settings, or a line other than
                the last is damaged (the message names the file, the line, and how to go on).
            OSError: the file cannot be created or written (e.g. ``PermissionError``).
        """
        done: dict[int, Episode] = {}
        good, newline = 0, False  # bytes up to the last complete line; is its newline missing
        if self.path.exists():
            lines = self.path.read_bytes().split(b"\n")
            if self._header_only(lines):
                lines = []  # no finished episode, whatever the settings: start over
            for number, raw in enumerate(lines, start=1):
                last = number == len(lines) or (number == len(lines) - 1 and not lines[-1])
                if raw.strip():
                    try:
                        self._read_line(number, raw, done)
                    except PartFileError:
                        if not last:
                            raise
                        break  # torn last line: keep what precedes it
                if number < len(lines):
                    good += len(raw) + 1
                elif raw.strip():  # a complete record whose newline was not written
                    good, newline = good + len(raw), True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("r+b" if self.path.exists() else "wb")
        self._file.truncate(good)
        self._file.seek(good)
        if newline:
            self._file.write(b"\n")
        if good == 0:
            self._write({"agentworld_part": VERSION, "settings": self.settings})
        return done

    @staticmethod
    def _header_only(lines: list[bytes]) -> bool:
        """True when ``lines`` are a part file's header line and nothing else (a run that
        failed or was killed before its first episode finished)."""
        kept = [raw for raw in lines if raw.strip()]
        if len(kept) != 1:
            return False
        try:
            header = json.loads(kept[0])
        except (UnicodeDecodeError, json.JSONDecodeError):
            return False
        return isinstance(header, dict) and header.get("agentworld_part") == VERSION

    def _read_line(self, number: int, raw: bytes, done: dict[int, Episode]) -> None:
        where = f"{self.path}, line {number}"
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise PartFileError(f"{where}: not JSON ({e}); delete the file to start over") from None
        if number == 1:
            if not isinstance(record, dict) or record.get("agentworld_part") != VERSION:
                raise PartFileError(f"{where}: not an agentworld part file; delete it or choose "
                                    "another --out")
            if record.get("settings") != self.settings:
                raise PartFileError(
                    f"{self.path} holds episodes collected with other settings "
                    f"({record.get('settings')}, now {self.settings}); rerun with those settings "
                    "to resume, or delete the file to start over")
            return
        try:
            done[int(record["index"])] = Episode.model_validate(record["episode"])
        except (KeyError, TypeError, ValueError, ValidationError) as e:
            raise PartFileError(f"{where}: not a finished episode ({type(e).__name__}); delete "
                                "the file to start over") from None

    def _write(self, record: dict[str, Any]) -> None:
        self._file.write(json_line(record))
        self._file.flush()
        os.fsync(self._file.fileno())

    def append(self, index: int, episode: Episode) -> None:
        """Append finished episode ``index`` durably (thread-safe)."""
        with self._lock:
            self._write({"index": index, "episode": episode.model_dump(mode="json")})
            self.appended += 1

    def close(self) -> None:
        """Close the file (it stays on disk for a rerun)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def remove(self) -> None:
        """Close and delete the file (once the data set is written)."""
        self.close()
        self.path.unlink(missing_ok=True)
