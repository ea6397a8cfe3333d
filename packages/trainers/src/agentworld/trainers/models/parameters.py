"""Counting a model's parameters: shared by model building (:mod:`.specs`) and the pretrained
bases (:mod:`.pretrained`), which both report it."""

from __future__ import annotations

import torch


def num_parameters(model: torch.nn.Module) -> int:
    """Distinct trainable-or-not parameters (tied embeddings counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
