"""Progress reporting for the training loop: a rich progress bar (optional) and the user callback."""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol, runtime_checkable

from agentworld.trainers.training.config import TrainConfig


@runtime_checkable
class StepProgress(Protocol):
    """A ``cfg.callback`` that also takes a record after every optimizer step, so that it can
    report on a time cadence whatever ``log_every`` is (the CLI's progress lines off a
    terminal): ``on_step({"step", "loss"?, "tokens_per_s"?, "elapsed_s"})``, with the step's own
    loss and the tokens per second of the last log record. Log records still go to
    ``__call__``."""

    def __call__(self, record: dict[str, Any]) -> None: ...

    def on_step(self, record: dict[str, Any]) -> None: ...


class Reporter:
    """Shows a rich progress bar when ``cfg.progress`` (``None``: when standard output is a
    terminal) and forwards log records to ``cfg.callback``.

    The bar measures optimizer steps against ``total``; when only a time budget bounds the
    run (``total`` is ``None``), it measures seconds against ``cfg.time_budget_s`` instead
    and shows the step count beside it.

    Args:
        cfg: The stage config.
        total: Optimizer steps planned (``None`` when only a time budget bounds the run).
        start: Step the run starts at (non-zero when resuming).
        enabled: False on non-main processes (nothing is shown or called).
    """

    def __init__(
        self, cfg: TrainConfig, total: int | None, *, start: int = 0, enabled: bool = True
    ):
        self.callback = cfg.callback if enabled else None
        self.last_rate: float | None = None  # tokens_per_s of the last log record
        self.bar: Any = None
        self.task: Any = None
        self.by_time = total is None and cfg.time_budget_s is not None
        self.started = time.monotonic()
        show = cfg.progress if cfg.progress is not None else sys.stdout.isatty()
        if enabled and show:
            try:
                from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
            except ImportError:  # rich is optional
                return
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[steps]}"),
                TextColumn("{task.fields[info]}"),
                TimeElapsedColumn(),
            )
            if self.by_time:
                bar_total, completed = cfg.time_budget_s, 0.0
            else:
                bar_total, completed = total, start
            self.task = self.bar.add_task(
                "train", total=bar_total, completed=completed, info="", steps=self._steps(start, total)
            )
            self.bar.start()

    def info(self, text: str) -> None:
        """A one-off message (printed above the bar when one is shown)."""
        if self.bar is not None:
            self.bar.console.print(text, markup=False)

    def log(self, record: dict[str, Any]) -> None:
        """A ``train_log.jsonl`` record (``step``, ``loss``, ``lr``, ``tokens``, ``tokens_per_s``, ``elapsed_s``)."""
        if self.bar is not None:
            info = f"loss {record['loss']:.3f}  {record['tokens_per_s']:.0f} tok/s"
            self.bar.update(self.task, info=info)
        rate = record.get("tokens_per_s")
        self.last_rate = float(rate) if isinstance(rate, int | float) else self.last_rate
        if self.callback is not None:
            self.callback(record)

    def advance(
        self, step: int, metrics: dict[str, Any] | None = None, elapsed_s: float | None = None
    ) -> None:
        """Move the bar to optimizer ``step`` (or to the seconds elapsed, when time-bounded);
        a :class:`StepProgress` callback gets the step's record (``metrics``' numbers, e.g.
        its ``loss``; ``elapsed_s``: seconds of training so far)."""
        if isinstance(self.callback, StepProgress):
            numbers = {k: v for k, v in (metrics or {}).items()
                       if isinstance(v, int | float) and not isinstance(v, bool)}
            record: dict[str, Any] = {"step": step, **numbers}
            if self.last_rate is not None:
                record.setdefault("tokens_per_s", self.last_rate)
            if elapsed_s is not None:
                record["elapsed_s"] = elapsed_s
            self.callback.on_step(record)
        if self.bar is not None:
            total = None if self.by_time else self.bar.tasks[0].total
            completed = time.monotonic() - self.started if self.by_time else step
            self.bar.update(self.task, completed=completed, steps=self._steps(step, total))

    @staticmethod
    def _steps(step: int, total: float | None) -> str:
        return f"step {step}/{int(total)}" if total is not None else f"step {step}"

    def close(self) -> None:
        """Stop the bar."""
        if self.bar is not None:
            self.bar.stop()
