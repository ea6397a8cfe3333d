"""Random fp32 tiny causal LMs built from configs, shared by the sim-runtime and trainer tests."""

from __future__ import annotations

from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM


def tiny_lm(
    arch: str, vocab: int, max_positions: int, seed: int = 0, **extra: Any
) -> torch.nn.Module:
    """A random ``"qwen3"`` or ``"llama"`` model in eval mode: 2 layers, hidden 64, 4 query /
    2 key-value heads of 16, MLP 128; ``extra`` goes to the config (e.g. ``eos_token_id``)."""
    common = dict(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        initializer_range=0.2,
        **extra,
    )
    torch.manual_seed(seed)
    if arch == "qwen3":
        return Qwen3ForCausalLM(Qwen3Config(head_dim=16, **common)).eval()
    return LlamaForCausalLM(LlamaConfig(**common)).eval()
