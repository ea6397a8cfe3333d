"""Progress as plain lines, for output that is not a terminal (a log file, CI, ``nohup``).

On a terminal the trainers and ``collect`` draw a progress bar; elsewhere they used to print
nothing until the end (training: a line per ``log_every`` steps at best).
:class:`ProgressLines` is a trainer ``callback`` (it receives every ``train_log.jsonl``
record, and a record after every optimizer step) that prints the first record and then one
line per ``every_s`` seconds at most::

    sft: step 120, loss 1.284, 2,410 tok/s, 31 s

:class:`CountLines` does the same for a count (``collect``'s episodes).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

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

    It takes the trainer's log records (``__call__``) and, from a training loop that sends
    them (:class:`agentworld.trainers.training.progress.StepProgress`), a record after every
    optimizer step (:meth:`on_step`), so lines follow ``every_s`` whatever the stage's
    ``log_every`` is. A step already printed is not printed again.

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
        self.last_step: Any = None

    def __call__(self, record: dict[str, Any]) -> None:
        now = self.clock()
        if self.last is not None and now - self.last < self.every_s:
            return
        if record.get("step") is not None and record.get("step") == self.last_step:
            return
        self.last, self.last_step = now, record.get("step")
        self.write(format_record(self.stage, record))

    def on_step(self, record: dict[str, Any]) -> None:
        """A record after one optimizer step (``step``, the step's ``loss``, ...); printed
        under the same cadence as log records."""
        self(record)


class CountLines:
    """Progress of a count as plain lines, for output that is not a terminal::

        collect terminal: 12/200 episodes, 31 s

    The first :meth:`advance` prints, then one line per ``every_s`` seconds at most, and the
    one reaching ``total`` always. Safe to call from several threads (collection workers).

    Args:
        label: What the lines start with (``collect terminal``).
        total: The count at the end.
        write: Where a line goes.
        every_s: Seconds between lines (0: every advance).
        unit: What is counted (``episodes``).
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        label: str,
        total: int,
        write: Callable[[str], Any] = print,
        every_s: float = 30.0,
        unit: str = "episodes",
        clock: Callable[[], float] = time.monotonic,
    ):
        self.label, self.total, self.write, self.every_s = label, total, write, every_s
        self.unit, self.clock = unit, clock
        self.done, self.start, self.last = 0, clock(), None
        self._lock = threading.Lock()

    def advance(self, k: int = 1) -> None:
        """Count ``k`` more; print a line when one is due."""
        with self._lock:
            self.done += k
            now = self.clock()
            due = self.last is None or now - self.last >= self.every_s
            if not (due or self.done >= self.total):
                return
            self.last = now
            self.write(f"{self.label}: {self.done}/{self.total} {self.unit}, "
                       f"{now - self.start:.0f} s")


def progress_bar(console: Console) -> Progress:
    """A rich progress bar with count and elapsed time."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console)


def collect_with_progress(domain_name: str, n: int, console: Console, every_s: float = 30.0,
                          **options: Any) -> list[Any]:
    """:func:`~agentworld.core.collect.collect` ``n`` episodes of a domain (by plugin name)
    under a progress bar, or, when ``console`` is no terminal, a line per ``every_s`` seconds
    at most (:class:`CountLines`)."""
    from agentworld.core import plugins
    from agentworld.core.collect import collect

    domain = plugins.get_domain(domain_name)
    if not console.is_terminal:

        def write(line: str) -> None:
            console.print(line, markup=False, highlight=False)

        lines = CountLines(f"collect {domain_name}", n, write, every_s)
        return collect(domain, n, progress=lines.advance, **options)
    with progress_bar(console) as bar:
        task = bar.add_task(f"collect {domain_name}", total=n)
        return collect(domain, n, progress=lambda k: bar.advance(task, k), **options)
