"""Progress as plain lines, for output that is not a terminal (a log file, CI, ``nohup``).

On a terminal the trainers draw a progress bar; elsewhere they used to print nothing until
the stage ended. :class:`ProgressLines` is a trainer ``callback`` (it receives every
``train_log.jsonl`` record) that prints the first record and then one line per
``every_s`` seconds at most::

    sft: step 120, loss 1.284, 2,410 tok/s, 31 s
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# Shown first, in this order, when a record has them; any other numbers follow.
_KNOWN = ("step", "episode", "loss", "return", "tokens_per_s", "elapsed_s")


def format_record(stage: str, record: dict[str, Any], max_fields: int = 6) -> str:
    """One line of ``record``: ``"STAGE: step 120, loss 1.284, 2,410 tok/s, 31 s"``.

    Known keys (``step``, ``episode``, ``loss``, ``return``, ``tokens_per_s``, ``elapsed_s``)
    come first in a fixed form; other numeric keys follow as ``key value`` until ``max_fields``
    fields in all.
    """
    parts: list[str] = []
    for key in _KNOWN:
        value = record.get(key)
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        if key in ("step", "episode"):
            parts.append(f"{key} {int(value)}")
        elif key == "tokens_per_s":
            parts.append(f"{value:,.0f} tok/s")
        elif key == "elapsed_s":
            parts.append(f"{value:.0f} s")
        else:
            parts.append(f"{key} {value:.4g}")
    for key, value in record.items():
        if len(parts) >= max_fields:
            break
        if key not in _KNOWN and isinstance(value, int | float) and not isinstance(value, bool):
            parts.append(f"{key} {value:.4g}")
    return f"{stage}: " + ", ".join(parts)


class ProgressLines:
    """A trainer ``callback`` printing one progress line per ``every_s`` seconds at most.

    Args:
        stage: Name the lines start with (``sft``).
        write: Where a line goes (``print``, a console's ``print``).
        every_s: Seconds between lines (0: every record); the first record is always printed.
        clock: Monotonic seconds (``time.monotonic``; tests pass their own).
    """

    def __init__(
        self,
        stage: str,
        write: Callable[[str], Any] = print,
        every_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.stage, self.write, self.every_s, self.clock = stage, write, every_s, clock
        self.last: float | None = None

    def __call__(self, record: dict[str, Any]) -> None:
        now = self.clock()
        if self.last is not None and now - self.last < self.every_s:
            return
        self.last = now
        self.write(format_record(self.stage, record))
