"""Checkpoints: the exported model in ``output_dir`` and the resumable state in ``output_dir/trainer_state``.

Layout of ``output_dir``::

    config.json, model.safetensors, tokenizer files   # from_pretrained(output_dir) works
    adapter/                                          # LoRA runs: the peft adapter alone
    trainer_state/                                    # accelerate state (model, optimizer, RNG) + state.json
    train_log.jsonl

Both writes are crash-safe: files are written into a temporary directory
and moved in with ``os.replace`` (atomic per file); ``trainer_state`` is
swapped as a whole directory, the previous one kept as ``trainer_state.old``
until the new one is in place. Files get ordinary modes (``0644`` under the usual
umask), readable by other users as any file the user creates.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from transformers import PreTrainedModel, PreTrainedTokenizerBase
from transformers.utils import logging as hf_logging

STATE = "trainer_state"
LOG = "train_log.jsonl"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _ordinary_modes(root: Path) -> None:
    """Give ``root``'s tree the modes of ordinarily created files (``0666``/``0777`` less the
    umask): safetensors and ``tempfile`` write ``0600``/``0700``, which other users (a
    serving account, a colleague) cannot read."""
    mask = _umask()
    for path in (root, *root.rglob("*")):
        if not path.is_symlink():
            path.chmod((0o777 if path.is_dir() else 0o666) & ~mask)


def _move_in(src: Path, dst: Path) -> None:
    """Move every file of ``src`` into ``dst`` with ``os.replace``; sub-directories are swapped whole."""
    dst.mkdir(parents=True, exist_ok=True)
    _ordinary_modes(src)
    for item in src.iterdir():
        target = dst / item.name
        if item.is_dir():
            if target.exists():
                shutil.rmtree(target)
            os.replace(item, target)
        else:
            os.replace(item, target)


def export_model(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    out: Path,
    *,
    is_lora: bool,
    state_dict: dict[str, torch.Tensor] | None = None,
) -> None:
    """Write ``model`` (merged when ``is_lora``) and ``tokenizer`` into ``out`` with ``save_pretrained``.

    ``model`` is the unwrapped model (a peft ``PeftModel`` when ``is_lora``);
    the merge happens on a copy, so training continues unaffected.
    ``state_dict`` (full-model runs only) replaces ``model``'s own weights: the
    gathered state of a model sharded by FSDP or DeepSpeed ZeRO-3
    (``Accelerator.get_state_dict``).
    """
    out.mkdir(parents=True, exist_ok=True)
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        _export(model, tokenizer, out, is_lora, state_dict)
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def _export(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    out: Path,
    is_lora: bool,
    state_dict: dict[str, torch.Tensor] | None,
) -> None:
    with tempfile.TemporaryDirectory(dir=out, prefix=".export-") as tmp:
        root = Path(tmp)
        full: PreTrainedModel
        if is_lora:
            model.save_pretrained(str(root / "adapter"))
            full = copy.deepcopy(model).merge_and_unload()
        else:
            full = model  # type: ignore[assignment]
        full.save_pretrained(str(root), state_dict=state_dict)
        tokenizer.save_pretrained(str(root))
        _move_in(root, out)


def save_state(accelerator: Accelerator, out: Path, state: dict[str, Any]) -> None:
    """Save the resumable training state (all processes must call this).

    Every process writes its part (rank 0 the model and optimizer, each rank its RNG state)
    into ``trainer_state.tmp``; after a barrier, rank 0 swaps it in as ``trainer_state``.

    Args:
        accelerator: The run's accelerator (its prepared model and optimizer are saved).
        out: The run's ``output_dir``.
        state: JSON-serialisable counters (``step``, ``micro``, ``tokens``, ``elapsed_s``, ...).
    """
    final, tmp, old = out / STATE, out / f"{STATE}.tmp", out / f"{STATE}.old"
    if accelerator.is_main_process and tmp.exists():
        shutil.rmtree(tmp)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp), safe_serialization=False)
    # every rank writes into ``tmp`` (its own ``random_states_{rank}.pkl``); rank 0 may move it
    # into place only once all have finished, or a late rank writes into a directory gone
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        (tmp / "state.json").write_text(json.dumps(state, indent=1))
        _ordinary_modes(tmp)
        if old.exists():
            shutil.rmtree(old)
        if final.exists():
            os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()


def find_state(out: Path) -> Path | None:
    """The newest complete ``trainer_state`` directory under ``out``, or ``None``."""
    for path in (out / STATE, out / f"{STATE}.old"):
        if (path / "state.json").is_file():
            return path
    return None


def load_state(accelerator: Accelerator, path: Path) -> dict[str, Any]:
    """Restore model, optimizer and RNG states from ``path``; returns its ``state.json`` counters."""
    accelerator.load_state(str(path))
    return json.loads((path / "state.json").read_text())


def describe(out: Path) -> str | None:
    """What checkpoint ``out`` holds, in words (``"a checkpoint of step 40"``, ``"a model
    (config.json)"``), or ``None`` when it holds none (missing, empty, or other files only)."""
    state = find_state(out)
    if state is not None:
        try:
            step = json.loads((state / "state.json").read_text())["step"]
        except (OSError, ValueError, KeyError, TypeError):
            return f"a checkpoint ({state.name}/)"
        return f"a checkpoint of step {step}"
    if (out / "config.json").is_file():
        return "a model (config.json)"
    return None


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".safetensors.index.json", ".bin.index.json")


def clear(out: Path) -> None:
    """Remove what a training run wrote into ``out`` (resumable state, weights, adapter, log),
    so a replacing run cannot mix with it (e.g. a stale sharded index beside new weights).
    Config and tokenizer files are left for ``save_pretrained`` to replace; other files stay."""
    for name in (STATE, f"{STATE}.old", f"{STATE}.tmp", "adapter"):
        shutil.rmtree(out / name, ignore_errors=True)
    for item in out.iterdir():
        if item.is_file() and (item.name == LOG or item.name.endswith(WEIGHT_SUFFIXES)):
            item.unlink()


def truncate_log(out: Path, step: int, name: str = LOG) -> None:
    """Drop ``out/name`` records after ``step`` (written after the checkpoint we resume from).

    A torn last line (the process died while writing it) is dropped too.

    Raises:
        ValueError: any other line that is not a JSON object with a ``step`` (names the file
            and the line).
    """
    log = out / name
    if not log.exists():
        return
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    keep = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            kept = json.loads(line)["step"] <= step
        except (ValueError, KeyError, TypeError) as e:
            if number == len(lines):
                break  # torn last line
            reason = e.msg if isinstance(e, json.JSONDecodeError) else "no numeric 'step'"
            raise ValueError(
                f"{log}, line {number}: not a log record ({reason}); delete the line to resume"
            ) from None
        if kept:
            keep.append(line)
    log.write_text("".join(line + "\n" for line in keep), encoding="utf-8")


def append_log(out: Path, record: dict[str, Any], name: str = LOG) -> None:
    """Append one JSON record to the log ``out/name`` (``train_log.jsonl``)."""
    with (out / name).open("a") as f:
        f.write(json.dumps(record) + "\n")
