"""How many KV blocks a :class:`~agentworld.sim.engine.paged.PagedEngine` allocates by default."""

from __future__ import annotations

from typing import Any

import torch

from agentworld.sim.engine.runner import ModelRunner

CPU_KV_CACHE_BYTES = 1 << 30  # default KV budget on CPU (bytes)
GPU_KV_CACHE_FRACTION = 0.5  # default share of free accelerator memory for the KV cache


def default_num_blocks(
    model: Any,
    block_size: int,
    kv_cache_bytes: int | None,
    max_positions: int | None,
    max_num_seqs: int,
) -> int:
    """KV blocks fitting ``kv_cache_bytes`` (default: 1 GiB on CPU, half the free accelerator
    memory), capped at ``max_num_seqs`` full contexts of ``max_positions`` tokens.

    Raises:
        ValueError: ``kv_cache_bytes`` is smaller than one block.
    """
    per_block = ModelRunner.kv_bytes_per_block(
        model.config.get_text_config(), block_size, model.dtype
    )
    if kv_cache_bytes is None:
        if model.device.type == "cuda":
            free, _ = torch.cuda.mem_get_info(model.device)
            kv_cache_bytes = int(free * GPU_KV_CACHE_FRACTION)
        else:
            kv_cache_bytes = CPU_KV_CACHE_BYTES
    num_blocks = kv_cache_bytes // per_block
    if max_positions is not None:
        num_blocks = min(num_blocks, max_num_seqs * -(-max_positions // block_size))
    if num_blocks < 1:
        raise ValueError(f"kv_cache_bytes={kv_cache_bytes} holds no block of {per_block} bytes")
    return num_blocks
