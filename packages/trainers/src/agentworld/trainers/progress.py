"""Progress reporting for the training loop: a rich progress bar (optional) and the user callback."""

from __future__ import annotations

from typing import Any

from agentworld.trainers.config import TrainConfig


class Reporter:
    """Shows a rich progress bar when ``cfg.progress`` and forwards log records to ``cfg.callback``.

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
        self.bar: Any = None
        self.task: Any = None
        if enabled and cfg.progress:
            try:
                from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
            except ImportError:  # rich is optional
                return
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total}"),
                TextColumn("{task.fields[info]}"),
                TimeElapsedColumn(),
            )
            self.task = self.bar.add_task("train", total=total, completed=start, info="")
            self.bar.start()

    def info(self, text: str) -> None:
        """A one-off message (printed above the bar when one is shown)."""
        if self.bar is not None:
            self.bar.console.print(text)

    def log(self, record: dict[str, Any]) -> None:
        """A ``train_log.jsonl`` record (``step``, ``loss``, ``lr``, ``tokens``, ``tokens_per_s``, ``elapsed_s``)."""
        if self.bar is not None:
            info = f"loss {record['loss']:.3f}  {record['tokens_per_s']:.0f} tok/s"
            self.bar.update(self.task, info=info)
        if self.callback is not None:
            self.callback(record)

    def advance(self, step: int) -> None:
        """Move the bar to optimizer ``step``."""
        if self.bar is not None:
            self.bar.update(self.task, completed=step)

    def close(self) -> None:
        """Stop the bar."""
        if self.bar is not None:
            self.bar.stop()
