"""Loading an ``hf`` checkpoint: device and dtype resolution, and weights that name the file
that cannot be read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, PreTrainedModel
from transformers.utils import logging as hf_logging


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` -> ``cuda`` when available, else ``cpu``; anything else as given."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_dtype(dtype: str | torch.dtype, device: torch.device) -> torch.dtype:
    """``"auto"`` -> bfloat16 on a GPU that supports it, else float32; ``"float16"`` etc. by name.

    Raises:
        ValueError: ``dtype`` names no torch floating dtype.
    """
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype == "auto":
        cuda_bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if cuda_bf16 else torch.float32
    resolved = getattr(torch, dtype, None)
    if not isinstance(resolved, torch.dtype) or not resolved.is_floating_point:
        raise ValueError(f"unknown dtype {dtype!r}; use 'auto', 'float32', 'bfloat16' or 'float16'")
    return resolved


class DamagedCheckpointError(ValueError):
    """A checkpoint directory whose weight file cannot be read (truncated, overwritten)."""


def _damaged_weight_file(path: str) -> tuple[Path, str] | None:
    """The first ``*.safetensors`` file under ``path`` whose header or size is invalid, with
    the reason, or ``None`` when every one opens."""
    from safetensors import safe_open

    for file in sorted(Path(path).glob("*.safetensors")):
        try:
            with safe_open(str(file), framework="pt"):
                pass
        except Exception as e:  # noqa: BLE001 -- SafetensorError, or an OSError reading it
            return file, str(e)
    return None


def load_causal_lm(path: str, **kwargs: Any) -> PreTrainedModel:
    """``AutoModelForCausalLM.from_pretrained(path, **kwargs)``, without transformers' per-tensor
    "Loading weights" bar when ``path`` is a local directory: a checkpoint of a few million
    parameters loads in milliseconds, and the bar only breaks up the pipeline's own progress
    display. A hub id keeps its download bars.

    Raises:
        DamagedCheckpointError: a weight file of local ``path`` cannot be read; the message
            names the file (safetensors' own error names none).
    """
    if not Path(path).is_dir():
        return AutoModelForCausalLM.from_pretrained(path, **kwargs)
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return AutoModelForCausalLM.from_pretrained(path, **kwargs)
    except Exception:
        damaged = _damaged_weight_file(path)
        if damaged is None:
            raise
        file, reason = damaged
        raise DamagedCheckpointError(
            f"cannot read the weights in {file}: {reason}; the file is damaged or incomplete "
            "(copy or train the checkpoint again)"
        ) from None
    finally:
        if bars:
            hf_logging.enable_progress_bar()
