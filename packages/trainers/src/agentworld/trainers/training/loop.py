"""The one optimizer-step loop of every trainer, with hooks (in the manner of the
``training_step`` / ``on_*`` hooks of PyTorch Lightning and HF ``Trainer`` callbacks).

:class:`TrainLoop` owns what all stages share: the learning-rate schedule
(:func:`lr_factor`), the stop rule (``total`` steps or the time budget, agreed across ranks
by :func:`time_is_up`), the metrics log (``train_log.jsonl`` or another name, means over
ranks, accelerate trackers, progress bar and callback), periodic and final crash-safe
checkpoints (:mod:`agentworld.trainers.training.checkpoint`). A stage implements
:meth:`TrainLoop.training_step` and may override the other hooks: the supervised loop of
``cpt``/``sft`` (:class:`~agentworld.trainers.training.base.SupervisedLoop`), GRPO
(:class:`~agentworld.trainers.training.grpo_loop.GrpoLoop`) for the world-model ``rl`` stage
and the LM agent trainer.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import torch
from accelerate import Accelerator

from agentworld.trainers.training import checkpoint as ckpt
from agentworld.trainers.training.config import TrainConfig
from agentworld.trainers.training.progress import Reporter
from agentworld.trainers.training.tracking import start_trackers


def lr_factor(cfg: TrainConfig, step: int, total: int | None, elapsed_s: float) -> float:
    """Learning-rate multiplier at optimizer ``step``: linear warm-up, then cosine to ``min_lr_ratio``.

    Progress through the cosine is the larger of ``step / total`` and
    ``elapsed_s / time_budget_s``, so a wall-clock budget also ends at the floor.
    """
    if step < cfg.warmup_steps:
        return (step + 1) / (cfg.warmup_steps + 1)
    fractions = [0.0]
    if total:
        fractions.append((step - cfg.warmup_steps) / max(1, total - cfg.warmup_steps))
    if cfg.time_budget_s:
        fractions.append(elapsed_s / cfg.time_budget_s)
    progress = min(1.0, max(fractions))
    return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def budget_clock(cfg: Any) -> Callable[[], float]:
    """The clock ``time_budget_s`` is counted on: ``time.perf_counter`` (wall seconds) or, with
    ``budget_clock = "process"``, ``time.process_time`` (CPU seconds of this process, all its
    threads: user plus system time, so a shared host's other processes do not use it up).
    A config without the option (the LM agent trainer's) counts wall seconds."""
    return time.process_time if getattr(cfg, "budget_clock", "wall") == "process" else time.perf_counter


def time_is_up(acc: Accelerator, budget_s: float | None, elapsed_s: float) -> bool:
    """Whether the time budget ``budget_s`` (seconds) has run out after ``elapsed_s`` seconds.

    With several processes the ranks agree (a max-reduction of their flags), so all of them
    stop at the same step; every rank must call it at the same points. ``False`` without a
    budget (and then no collective runs).
    """
    if budget_s is None:
        return False
    by_time = elapsed_s >= budget_s
    if acc.num_processes > 1:  # all ranks stop together
        flag = torch.tensor([float(by_time)], device=acc.device)
        by_time = bool(acc.reduce(flag, reduction="max").item())
    return by_time


class TrainLoop:
    """Optimizer steps until ``total`` steps or the time budget, logging and checkpointing.

    Each step: set the learning rate, :meth:`training_step`, count the step, decide (on all
    ranks alike) whether to stop; every ``log_every`` steps and at the end write a record
    ``{"step", "loss", "lr", <the step's metrics>, "elapsed_s"}``; every ``save_every``
    steps and at the end :meth:`save` a checkpoint.

    Args:
        acc: The run's accelerator.
        model: The prepared policy.
        opt: Its optimizer.
        tokenizer: Saved with every checkpoint.
        cfg: Stage options (``lr``, the schedule, ``time_budget_s``, ``log_every``,
            ``save_every``, ``seed``, ``lora``; ``report_to`` when the stage has trackers).
        out: ``output_dir``.
        counters: Resumable counters (at least ``step`` and ``elapsed_s``), saved in
            ``trainer_state/state.json``; updated in place.
        total: Steps to train (``None``: until the time budget).
        stage: The stage name (checkpoint state, tracker project ``agentworld-<stage>``).
    """

    log_name: ClassVar[str] = ckpt.LOG
    #: Record entries averaged over ranks before they are logged (multi-process runs).
    rank_mean_keys: ClassVar[tuple[str, ...]] = ("loss",)

    def __init__(
        self,
        acc: Accelerator,
        model: Any,
        opt: Any,
        tokenizer: Any,
        cfg: TrainConfig,
        out: Path,
        counters: dict[str, Any],
        total: int | None,
        *,
        stage: str,
    ) -> None:
        self.acc, self.model, self.opt, self.tokenizer = acc, model, opt, tokenizer
        self.cfg, self.out, self.c, self.total, self.stage = cfg, out, counters, total, stage
        self.unwrapped = acc.unwrap_model(model)
        self.report_to: list[str] = list(getattr(cfg, "report_to", []))
        self.clock = budget_clock(cfg)
        self.start, self.base_elapsed = self.clock(), float(counters["elapsed_s"])
        self.reporter: Reporter | None = None

    # -- hooks ----------------------------------------------------------------------------

    def training_step(self) -> dict[str, Any]:
        """One optimizer step; updates the stage's counters (not ``step``) and returns the
        step's metrics (``loss`` first, then the stage's own, in log order)."""
        raise NotImplementedError

    def describe(self) -> str | None:
        """A line printed above the progress bar before the first step (``None``: none)."""
        return None

    def on_train_begin(self) -> None:
        """Called once the clock runs, before the first step."""

    def log_metrics(self, metrics: dict[str, Any], now: float) -> dict[str, Any]:
        """The metrics a log record carries, from the last step's (``now``: the record's
        ``time.perf_counter()``); a stage that averages over the steps since the last record
        overrides it."""
        return dict(metrics)

    def on_log(self, record: dict[str, Any]) -> None:
        """Called with every record after it is written (console lines, user callbacks)."""

    # -- the loop -------------------------------------------------------------------------

    def elapsed(self) -> float:
        """Seconds of training on the budget's clock (:func:`budget_clock`), summed over
        resumed runs."""
        return self.base_elapsed + self.clock() - self.start

    def finished(self) -> bool:
        """``total`` steps done or the time budget spent (every rank gets the same answer)."""
        budget_spent = time_is_up(self.acc, self.cfg.time_budget_s, self.elapsed())
        return budget_spent or (self.total is not None and self.c["step"] >= self.total)

    def run(self) -> None:
        """Train until :meth:`finished`, then save the final checkpoint."""
        acc, cfg, c = self.acc, self.cfg, self.c
        self.reporter = Reporter(cfg, self.total, start=c["step"], enabled=acc.is_main_process)
        text = self.describe()
        if text is not None:
            self.reporter.info(text)
        config = cfg.model_dump(mode="json")
        start_trackers(acc, self.report_to, self.out, f"agentworld-{self.stage}", config)
        self.start, self.base_elapsed = self.clock(), float(c["elapsed_s"])
        self.on_train_begin()
        done = self.finished()
        while not done:
            for group in self.opt.param_groups:
                group["lr"] = cfg.lr * lr_factor(cfg, c["step"], self.total, self.elapsed())
            metrics = self.training_step()
            c["step"] += 1
            done = self.finished()
            if c["step"] % cfg.log_every == 0 or done:
                self.log(metrics)
            self.reporter.advance(c["step"], metrics, self.elapsed())
            if cfg.save_every and c["step"] % cfg.save_every == 0 and not done:
                self.save()
        self.reporter.close()
        if self.report_to:
            acc.end_training()
        self.save()

    def log(self, metrics: dict[str, Any]) -> None:
        """Write one record: the log file (main rank), the trackers, the progress bar and
        ``cfg.callback``, then :meth:`on_log`."""
        acc = self.acc
        now = time.perf_counter()
        self.c["elapsed_s"] = self.elapsed()
        metrics = self.log_metrics(metrics, now)
        if acc.num_processes > 1:  # means over ranks, not rank 0's alone
            keys = [k for k in self.rank_mean_keys if isinstance(metrics.get(k), int | float)]
            local = torch.tensor([metrics[k] for k in keys], dtype=torch.float64, device=acc.device)
            metrics.update(zip(keys, acc.reduce(local, reduction="mean").tolist()))
        record = {
            "step": self.c["step"],
            "loss": metrics.pop("loss"),
            "lr": self.opt.param_groups[0]["lr"],
            **metrics,
            "elapsed_s": round(self.c["elapsed_s"], 3),
        }
        if acc.is_main_process:
            ckpt.append_log(self.out, record, self.log_name)
        if self.report_to:
            acc.log(record, step=self.c["step"])
        assert self.reporter is not None
        self.reporter.log(record)
        self.on_log(record)

    def save(self) -> None:
        """Export the model (merged under LoRA; gathered when sharded) and the resumable
        state (every rank takes part)."""
        acc = self.acc
        self.c["elapsed_s"] = self.elapsed()
        acc.wait_for_everyone()
        is_lora = self.cfg.lora is not None
        # Every process takes part in gathering a sharded (FSDP, DeepSpeed ZeRO-3) model.
        state = None if is_lora or acc.num_processes == 1 else acc.get_state_dict(self.model)
        if acc.is_main_process:
            ckpt.export_model(
                acc.unwrap_model(self.model), self.tokenizer, self.out, is_lora=is_lora,
                state_dict=state,
            )
        ckpt.save_state(acc, self.out, {**self.c, "stage": self.stage, "seed": self.cfg.seed})
