"""The training loop shared by the ``cpt`` and ``sft`` stages.

A stage subclasses :class:`BaseTrainer` and provides ``samples(episodes,
tokenizer, config)``. The loop: seed, tokenizer, model (optionally LoRA),
AdamW with linear warm-up and cosine decay, ``accelerate.Accelerator`` for
device placement and gradient accumulation, periodic crash-safe checkpoints,
``train_log.jsonl``, and resume from ``output_dir/trainer_state``.
"""

from __future__ import annotations

import math
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState
from accelerate.utils import DistributedType, set_seed
from agentworld.core.card import card_from_episodes, write_card
from agentworld.core.formats import cpt_text, episode_messages
from agentworld.core.types import Episode
from agentworld.trainers.training import checkpoint as ckpt
from agentworld.trainers.training.config import TrainConfig, option_help, validate_config
from agentworld.trainers.training import speed
from agentworld.trainers.training.data import Sample, batch_stream, collate, length_batches
from agentworld.trainers.models.specs import (
    ModelSpecError,
    check_model_spec,
    check_preset_tokenizer,
    is_checkpoint_dir,
    load_model,
    num_parameters,
)
from agentworld.trainers.training.progress import Reporter
from agentworld.trainers.models.tokenizer import train_tokenizer
from agentworld.trainers.training.tracking import start_trackers
from transformers import AutoTokenizer, PreTrainedTokenizerBase


def corpus_texts(episodes: Sequence[Episode]) -> list[str]:
    """Tokenizer training texts: each episode's CPT document and its ChatML transcript."""
    texts = []
    for e in episodes:
        texts.append(cpt_text(e))
        texts.append(
            "".join(
                f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in episode_messages(e)
            )
        )
    return texts


def resolve_mixed_precision(value: str | None) -> str | None:
    """``value`` unchanged, except ``"auto"``: ``"bf16"`` where bf16 matmuls run natively
    (a CUDA device with bf16, else a CPU with AVX512-BF16 or AMX tiles, as torch reports
    through ``torch.cpu._is_avx512_bf16_supported`` / ``_is_amx_tile_supported``), ``"no"``
    elsewhere."""
    if value != "auto":
        return value
    if torch.cuda.is_available():
        return "bf16" if torch.cuda.is_bf16_supported() else "no"
    native = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return "bf16" if any(getattr(torch.cpu, name, lambda: False)() for name in native) else "no"


def _accelerator(cfg: TrainConfig) -> Accelerator:
    """An ``Accelerator`` for one training run. accelerate keeps one process-wide state and
    would keep (or refuse to change) an earlier run's ``mixed_precision``; a single-process
    run (a notebook, a pipeline whose stages differ) starts from a fresh state instead.
    Launched multi-process runs keep theirs.

    Under ``torchrun`` on a machine without a GPU, the processes join one gloo group
    (``cpu=True``): without it accelerate runs each as a separate single process, every one
    of them writing the checkpoint. (``accelerate launch --cpu --num_processes N`` starts only
    one process; accelerate runs several CPU processes only through MPI.)"""
    precision = resolve_mixed_precision(cfg.mixed_precision)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    xpu = getattr(torch, "xpu", None)
    gpu = torch.cuda.is_available() or (xpu is not None and xpu.is_available())
    cpu = world > 1 and not gpu
    # ``None`` means what `accelerate launch` exported, "no" when not launched.
    wanted = precision or os.environ.get("ACCELERATE_MIXED_PRECISION", "no")
    state = AcceleratorState._shared_state  # the process-wide dict (empty before the first)
    if state.get("distributed_type") == DistributedType.NO and state.get("_mixed_precision") != wanted:
        AcceleratorState._reset_state(reset_partial_state=True)
    return Accelerator(
        gradient_accumulation_steps=cfg.grad_accum, mixed_precision=precision, cpu=cpu
    )


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


def budget_clock(cfg: TrainConfig) -> Callable[[], float]:
    """The clock ``time_budget_s`` is counted on: ``time.perf_counter`` (wall seconds) or, with
    ``budget_clock = "process"``, ``time.process_time`` (CPU seconds of this process, all its
    threads: user plus system time, so a shared host's other processes do not use it up)."""
    return time.process_time if cfg.budget_clock == "process" else time.perf_counter


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


def _check_model_and_tokenizer(cfg: TrainConfig) -> None:
    """Refuse, before anything loads, a model and tokenizer that cannot go together.

    Raises:
        ModelSpecError: a preset (built from a config, so without a vocabulary) and no
            tokenizer, unless a resumed run saved one in ``output_dir``; or ``tokenizer`` is a
            path that is not a directory.
        ValueError: ``tokenizer="train"`` with a checkpoint directory (its embeddings do not
            know a freshly trained vocabulary).
    """
    saved = cfg.resume and (Path(cfg.output_dir) / "tokenizer_config.json").is_file()
    check_preset_tokenizer(cfg.model, has_tokenizer=cfg.tokenizer is not None or saved)
    if cfg.tokenizer == "train" and is_checkpoint_dir(cfg.model):
        raise ValueError(
            f"tokenizer='train' builds a new vocabulary that checkpoint {cfg.model!r} "
            "does not know; leave tokenizer unset to use the checkpoint's own"
        )
    if cfg.tokenizer not in (None, "train") and not Path(cfg.tokenizer).is_dir():
        raise ModelSpecError(
            f"tokenizer {cfg.tokenizer!r} is not a directory: give a tokenizer directory, 'train' "
            "(a BPE trained on the episodes), or leave it unset for the model checkpoint's own"
        )


class OutputDirError(ValueError):
    """An ``output_dir`` a run cannot write into as asked (a file, or an earlier checkpoint)."""


def _check_output_dir(cfg: TrainConfig) -> None:
    """Refuse an ``output_dir`` that is a file, and one that holds a checkpoint when the run
    would neither resume it nor (``overwrite``) replace it: re-running a command must not
    silently restart from step 0 over an earlier run's checkpoint.

    Raises:
        OutputDirError: ``output_dir`` (or a parent) is a file; or it holds a checkpoint and
            neither ``resume`` nor ``overwrite`` is set (the message says how to go on).
    """
    out = Path(cfg.output_dir)
    for path in (out, *out.parents):
        if path.exists() and not path.is_dir():
            raise OutputDirError(
                f"output_dir {str(out)!r}: {str(path)!r} is a file, not a directory; "
                "choose another --output-dir"
            )
    held = None if cfg.resume or cfg.overwrite or not out.is_dir() else ckpt.describe(out)
    if held is not None:
        raise OutputDirError(
            f"output_dir {str(out)!r} holds {held}; pass --set resume=true to continue it, "
            "--set overwrite=true to replace it, or choose another --output-dir"
        )


def _main_rank() -> bool:
    """True on the process that owns the output directory (``RANK`` 0, or no launcher)."""
    return os.environ.get("RANK", "0") == "0"


class BaseTrainer:
    """A :class:`~agentworld.core.protocols.Trainer` built on transformers + accelerate."""

    name: ClassVar[str] = "base"
    config_cls: ClassVar[type[TrainConfig]] = TrainConfig

    def samples(
        self, episodes: Sequence[Episode], tokenizer: PreTrainedTokenizerBase, cfg: TrainConfig
    ) -> list[Sample]:
        """The stage's training sequences."""
        raise NotImplementedError

    def card(self, episodes: Sequence[Episode], cfg: TrainConfig) -> dict[str, Any]:
        """The world-model card saved beside the checkpoint (:mod:`agentworld.core.card`);
        stages extend it."""
        return card_from_episodes(episodes)

    def check_options(self, config: dict[str, Any]) -> None:
        """Validate stage options without training (a pipeline's check before its first
        training stage).

        Raises:
            agentworld.trainers.training.config.ConfigError: what :meth:`train` would raise for them.
        """
        _check_model_and_tokenizer(validate_config(self.config_cls, config))

    def options(self) -> list[tuple[str, str, str]]:
        """``(key, default, description)`` of every option (``agentworld train STAGE --options``)."""
        return option_help(self.config_cls)

    def check(self, episodes: Sequence[Episode], cfg: TrainConfig) -> None:
        """Cheap input checks run before any model is loaded; stages extend it.

        Raises:
            ValueError: no episodes, a model that is no preset, checkpoint or (with
                ``allow_hub``) hub id, or a model/tokenizer pair that cannot work
                (:func:`_check_model_and_tokenizer`).
            OutputDirError: an ``output_dir`` that is a file, or that holds a checkpoint
                the run would neither resume nor replace (:func:`_check_output_dir`).
        """
        if not episodes:
            raise ValueError(f"{self.name} needs at least one episode, got none")
        check_model_spec(cfg.model, allow_hub=cfg.allow_hub)
        _check_model_and_tokenizer(cfg)
        _check_output_dir(cfg)

    def _tokenizer(
        self, episodes: Sequence[Episode], cfg: TrainConfig, out: Path, resuming: bool
    ) -> Any:
        if resuming and (out / "tokenizer_config.json").is_file():
            return AutoTokenizer.from_pretrained(str(out))
        if cfg.tokenizer == "train":
            return train_tokenizer(corpus_texts(episodes), cfg.vocab_size)
        if cfg.tokenizer is not None:  # a directory: check() made sure
            return AutoTokenizer.from_pretrained(cfg.tokenizer)
        return None

    def train(self, episodes: Sequence[Episode], config: dict[str, Any] | TrainConfig) -> str:
        """Train on ``episodes`` and return ``output_dir`` (a ``from_pretrained``-loadable checkpoint).

        Bad input fails before any model is loaded (:meth:`check`) or, for the
        model and tokenizer themselves, before the first training step. A run that fails
        removes the ``output_dir`` it created unless a checkpoint to resume was saved there.
        With ``overwrite`` (and no ``resume``), an earlier run's state, weights, adapter and
        log are removed first (:func:`agentworld.trainers.training.checkpoint.clear`).

        Raises:
            agentworld.trainers.training.config.ConfigError: invalid ``config`` (unknown keys included).
            agentworld.trainers.models.specs.ModelSpecError: unknown preset, missing model
                path, checkpoint without a tokenizer, preset without one, ``tokenizer`` path
                missing, tokenizer larger than the model's vocabulary.
            ValueError: no usable episodes (see :meth:`check` and the stage's own checks).
            OutputDirError: see :meth:`check`.
        """
        cfg = (
            config if isinstance(config, self.config_cls) else validate_config(self.config_cls, config)
        )
        self.check(episodes, cfg)
        out = Path(cfg.output_dir)
        created = not out.exists()
        try:
            return self._train(episodes, cfg, out)
        except BaseException:
            if created and _main_rank() and out.is_dir() and ckpt.find_state(out) is None:
                shutil.rmtree(out, ignore_errors=True)  # no half-made output directory
            raise

    def _train(self, episodes: Sequence[Episode], cfg: TrainConfig, out: Path) -> str:
        if cfg.num_threads:
            torch.set_num_threads(cfg.num_threads)
        out.mkdir(parents=True, exist_ok=True)
        if cfg.overwrite and not cfg.resume and _main_rank():
            ckpt.clear(out)
        write_card(out, self.card(episodes, cfg))
        state_dir = ckpt.find_state(out) if cfg.resume else None
        tokenizer = self._tokenizer(episodes, cfg, out, state_dir is not None)
        set_seed(cfg.seed)
        # Before the model loads: FSDP's cpu_ram_efficient_loading (weights read on rank 0 only)
        # takes effect through the environment the Accelerator sets up.
        acc = _accelerator(cfg)
        model, tokenizer = load_model(cfg.model, tokenizer, allow_hub=cfg.allow_hub)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        if cfg.freeze_layers:
            speed.freeze_lower_layers(model, cfg.freeze_layers)
        if cfg.lora is not None:
            from peft import LoraConfig, get_peft_model

            lora = LoraConfig(
                r=cfg.lora.r,
                lora_alpha=cfg.lora.alpha,
                lora_dropout=cfg.lora.dropout,
                target_modules=cfg.lora.target_modules,
                task_type="CAUSAL_LM",
            )
            model = get_peft_model(model, lora)
        if cfg.gradient_checkpointing:
            speed.enable_checkpointing(model)
        data = self.samples(episodes, tokenizer, cfg)
        if cfg.packing:
            data = speed.pack(data, cfg.max_seq_len)
        if acc.state.deepspeed_plugin is not None:
            # No dataloader goes through prepare(), so DeepSpeed cannot infer its micro-batch;
            # and DeepSpeed clips gradients itself (clip_grad_norm_ is then a no-op), so it
            # gets our threshold, whatever the launch config says.
            ds = acc.state.deepspeed_plugin.deepspeed_config
            ds["train_micro_batch_size_per_gpu"] = cfg.batch_size
            ds["gradient_clipping"] = cfg.max_grad_norm
        decay = [p for p in model.parameters() if p.requires_grad and p.ndim >= 2]
        rest = [p for p in model.parameters() if p.requires_grad and p.ndim < 2]
        opt = torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": cfg.weight_decay},
                {"params": rest, "weight_decay": 0.0},
            ],
            lr=cfg.lr,
            betas=(0.9, 0.95),
        )
        model, opt = acc.prepare(model, opt)
        # window_*: the steps since the last log record, saved so that the first record after
        # a resume averages the same steps as an uninterrupted run's.
        counters = {"step": 0, "micro": 0, "tokens": 0, "elapsed_s": 0.0,
                    "window_loss": 0.0, "window_steps": 0}
        if state_dir is not None:
            counters.update(ckpt.load_state(acc, state_dir))
            if acc.is_main_process:
                ckpt.truncate_log(out, counters["step"])
        elif acc.is_main_process and (out / ckpt.LOG).exists():
            (out / ckpt.LOG).unlink()
        per_epoch = len(length_batches([len(s) for s in data], cfg.batch_size, cfg.seed))
        steps_per_epoch = per_epoch / (cfg.grad_accum * acc.num_processes)
        total = cfg.max_steps
        if cfg.epochs is not None or (total is None and cfg.time_budget_s is None):
            by_epochs = max(1, math.ceil((cfg.epochs or 1.0) * steps_per_epoch))
            total = min(total, by_epochs) if total else by_epochs
        self._loop(acc, model, opt, tokenizer, data, cfg, out, counters, total)
        return str(out)

    def _loop(
        self,
        acc: Accelerator,
        model: Any,
        opt: Any,
        tokenizer: Any,
        data: list[Sample],
        cfg: TrainConfig,
        out: Path,
        c: dict[str, Any],
        total: int | None,
    ) -> None:
        pad = tokenizer.pad_token_id
        stream = batch_stream(
            data, cfg.batch_size, cfg.seed, c["micro"], acc.process_index, acc.num_processes
        )
        reporter = Reporter(cfg, total, start=c["step"], enabled=acc.is_main_process)
        params = sum(p.numel() for p in model.parameters() if p.requires_grad)
        reporter.info(
            f"{self.name}: {len(data)} sequences, {num_parameters(model):,} parameters "
            f"({params:,} trainable), "
            + (f"{total} steps" if total else f"until the {cfg.time_budget_s:g} s time budget")
        )
        start_trackers(acc, cfg.report_to, out, f"agentworld-{self.name}", cfg.model_dump(mode="json"))
        clock = budget_clock(cfg)
        start, base_elapsed = clock(), c["elapsed_s"]
        window_tokens, window_t = 0, time.perf_counter()
        model.train()

        def finished() -> bool:
            elapsed = base_elapsed + clock() - start
            return time_is_up(acc, cfg.time_budget_s, elapsed) or (total is not None and c["step"] >= total)

        done = finished()
        while not done:
            elapsed = base_elapsed + clock() - start
            for group in opt.param_groups:
                group["lr"] = cfg.lr * lr_factor(cfg, c["step"], total, elapsed)
            step_loss, step_tokens = 0.0, 0
            for _ in range(cfg.grad_accum):
                micro = next(stream)
                batch = {k: v.to(acc.device) for k, v in collate(micro, pad).items()}
                with acc.accumulate(model):
                    loss = model(**batch, use_cache=False).loss
                    acc.backward(loss)
                    if acc.sync_gradients:
                        acc.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
                    opt.step()
                    opt.zero_grad()
                step_loss += loss.item() / cfg.grad_accum
                step_tokens += sum(len(s) for s in micro) * acc.num_processes
                c["micro"] += 1
            c["step"] += 1
            c["window_loss"] += step_loss
            c["window_steps"] += 1
            c["tokens"] += step_tokens
            window_tokens += step_tokens
            done = finished()
            if c["step"] % cfg.log_every == 0 or done:
                now = time.perf_counter()
                c["elapsed_s"] = base_elapsed + clock() - start
                loss = c["window_loss"] / c["window_steps"]
                if acc.num_processes > 1:  # the mean over ranks, not rank 0's alone
                    local = torch.tensor([loss], dtype=torch.float64, device=acc.device)
                    loss = acc.reduce(local, reduction="mean").item()
                record = {
                    "step": c["step"],
                    "loss": loss,
                    "lr": opt.param_groups[0]["lr"],
                    "tokens": c["tokens"],
                    "tokens_per_s": window_tokens / max(now - window_t, 1e-9),
                    "elapsed_s": round(c["elapsed_s"], 3),
                }
                if acc.is_main_process:
                    ckpt.append_log(out, record)
                if cfg.report_to:
                    acc.log(record, step=c["step"])
                reporter.log(record)
                c["window_loss"], c["window_steps"], window_tokens, window_t = 0.0, 0, 0, now
            reporter.advance(c["step"])
            if cfg.save_every and c["step"] % cfg.save_every == 0 and not done:
                t_save = time.perf_counter()
                self._save(acc, model, tokenizer, cfg, out, c, start, base_elapsed)
                window_t += time.perf_counter() - t_save  # keep tokens/s about training only
        reporter.close()
        if cfg.report_to:
            acc.end_training()
        self._save(acc, model, tokenizer, cfg, out, c, start, base_elapsed)

    def _save(
        self,
        acc: Accelerator,
        model: Any,
        tokenizer: Any,
        cfg: TrainConfig,
        out: Path,
        c: dict[str, Any],
        start: float,
        base_elapsed: float,
    ) -> None:
        c["elapsed_s"] = base_elapsed + budget_clock(cfg)() - start
        acc.wait_for_everyone()
        is_lora = cfg.lora is not None
        # Every process takes part in gathering a sharded (FSDP, DeepSpeed ZeRO-3) model.
        state = None if is_lora or acc.num_processes == 1 else acc.get_state_dict(model)
        if acc.is_main_process:
            ckpt.export_model(
                acc.unwrap_model(model), tokenizer, out, is_lora=is_lora, state_dict=state
            )
        ckpt.save_state(acc, out, {**c, "stage": self.name, "seed": cfg.seed})
