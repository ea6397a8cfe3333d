"""What every trainer does before its first step: the accelerator, the output directory
(refused when it holds a checkpoint the run would neither resume nor replace, removed when
a run that created it fails), the policy (LoRA optional), AdamW, and the resumed counters.

Used by :class:`~agentworld.trainers.training.base.BaseTrainer` (the ``cpt``, ``sft``,
``rl`` and ``policy_sft`` stages) and the LM agent trainer
(:func:`agentworld.trainers.agents.lm.trainer.train_lm_agent`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState
from accelerate.utils import DistributedType

from agentworld.trainers.models.specs import load_model
from agentworld.trainers.training import checkpoint as ckpt
from agentworld.trainers.training.cpu_fsdp import cpu_fsdp_plugin, enable_cpu_fsdp, fsdp_requested
from agentworld.trainers.training import speed
from agentworld.trainers.training.config import LoraSettings, TrainConfig


class OutputSettings(Protocol):
    """The options :func:`check_output_dir` reads (:class:`TrainConfig`, ``LmAgentConfig``)."""

    output_dir: str
    resume: bool
    overwrite: bool


class PolicySettings(Protocol):
    """The options :func:`load_policy` and :func:`make_optimizer` read."""

    model: str
    allow_hub: bool
    lora: LoraSettings | None
    lr: float
    weight_decay: float


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


def make_accelerator(cfg: TrainConfig) -> Accelerator:
    """An ``Accelerator`` for one training run. accelerate keeps one process-wide state and
    would keep (or refuse to change) an earlier run's ``mixed_precision``; a single-process
    run (a notebook, a pipeline whose stages differ) starts from a fresh state instead.
    Launched multi-process runs keep theirs.

    Under ``torchrun`` on a machine without a GPU, the processes join one gloo group
    (``cpu=True``): without it accelerate runs each as a separate single process, every one
    of them writing the checkpoint. (``accelerate launch --cpu --num_processes N`` starts only
    one process; accelerate runs several CPU processes only through MPI.) An FSDP launch
    (``ACCELERATE_USE_FSDP``) on such processes shards the model with FSDP2 over gloo
    (:mod:`agentworld.trainers.training.cpu_fsdp`).

    Raises:
        agentworld.trainers.training.cpu_fsdp.CpuFsdpError: an FSDP launch on CPU processes
            asking for what torch cannot do there (FSDP1, parameter offload)."""
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
    # accelerate ignores an FSDP launch on CPU processes (runs plain data parallel): build the
    # plugin here, refusing what torch cannot do on CPU, and switch the state to FSDP after.
    fsdp = cpu_fsdp_plugin() if cpu and fsdp_requested() else None
    acc = Accelerator(
        gradient_accumulation_steps=cfg.grad_accum, mixed_precision=precision, cpu=cpu,
        fsdp_plugin=fsdp,
    )  # fmt: skip
    if fsdp is not None:
        enable_cpu_fsdp(acc, fsdp)
    return acc


class OutputDirError(ValueError):
    """An ``output_dir`` a run cannot write into as asked (a file, or an earlier checkpoint)."""


def check_output_dir(cfg: OutputSettings) -> None:
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
                "choose another --out"
            )
    held = None if cfg.resume or cfg.overwrite or not out.is_dir() else ckpt.describe(out)
    if held is not None:
        raise OutputDirError(
            f"output_dir {str(out)!r} holds {held}; pass --set resume=true to continue it, "
            "--overwrite to replace it (overwrite = true in a pipeline file), or choose another "
            "--out"
        )


def main_rank() -> bool:
    """True on the process that owns the output directory (``RANK`` 0, or no launcher)."""
    return os.environ.get("RANK", "0") == "0"


@contextmanager
def output_dir_guard(out: Path) -> Iterator[None]:
    """Run the body; when it fails, remove ``out`` if this run created it and no checkpoint
    to resume (:func:`~agentworld.trainers.training.checkpoint.find_state`) was saved there,
    so a failed run leaves no half-made output directory. The exception propagates."""
    created = not out.exists()
    try:
        yield
    except BaseException:
        if created and main_rank() and out.is_dir() and ckpt.find_state(out) is None:
            shutil.rmtree(out, ignore_errors=True)
        raise


def prepare_output_dir(cfg: OutputSettings) -> Path | None:
    """Create ``output_dir``; with ``overwrite`` (and no ``resume``) first remove what an
    earlier run wrote (:func:`~agentworld.trainers.training.checkpoint.clear`). Returns the
    ``trainer_state`` to resume from (``resume`` and one exists), else ``None``."""
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if cfg.overwrite and not cfg.resume and main_rank():
        ckpt.clear(out)
    return ckpt.find_state(out) if cfg.resume else None


def load_policy(
    cfg: PolicySettings, tokenizer: Any, *, freeze_layers: int = 0, gradient_checkpointing: bool = False
) -> tuple[Any, Any]:
    """``(model, tokenizer)``: ``cfg.model`` loaded (:func:`~agentworld.trainers.models.specs.load_model`),
    the pad token defaulting to eos, the embeddings and the lowest ``freeze_layers`` decoder
    layers frozen, peft LoRA adapters added when ``cfg.lora`` is set, and activation
    checkpointing on with ``gradient_checkpointing`` (:mod:`agentworld.trainers.training.speed`).

    Raises:
        agentworld.trainers.models.specs.ModelSpecError: as ``load_model``.
        ValueError: ``freeze_layers`` would freeze every decoder layer.
    """
    model, tokenizer = load_model(cfg.model, tokenizer, allow_hub=cfg.allow_hub)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if freeze_layers:
        speed.freeze_lower_layers(model, freeze_layers)
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
    if gradient_checkpointing:
        speed.enable_checkpointing(model)
    return model, tokenizer


def make_optimizer(model: torch.nn.Module, cfg: PolicySettings) -> torch.optim.AdamW:
    """AdamW (betas 0.9, 0.95) over the trainable parameters: ``cfg.weight_decay`` on
    matrices, none on norms and biases."""
    decay = [p for p in model.parameters() if p.requires_grad and p.ndim >= 2]
    rest = [p for p in model.parameters() if p.requires_grad and p.ndim < 2]
    return torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": cfg.weight_decay},
            {"params": rest, "weight_decay": 0.0},
        ],
        lr=cfg.lr,
        betas=(0.9, 0.95),
    )


def restore(
    acc: Accelerator, out: Path, state_dir: Path | None, counters: dict[str, Any], log: str = ckpt.LOG
) -> None:
    """Resume from ``state_dir`` (model, optimizer and RNG states; ``counters`` updated from
    its ``state.json``) and drop the records of ``out/log`` written after that step; with no
    ``state_dir``, start ``out/log`` afresh."""
    if state_dir is not None:
        counters.update(ckpt.load_state(acc, state_dir))
        if acc.is_main_process:
            ckpt.truncate_log(out, counters["step"], log)
    elif acc.is_main_process and (out / log).exists():
        (out / log).unlink()
