"""Shared-prefix (cascade) attention for the CPU attention path.

When every item of an attention group starts with the same physical blocks (the
shared system prompt of a batch of episodes), those keys and values need not be
gathered and read once per item: all the group's queries attend to them in one
call, each item's queries attend to the rest of its own context in a second call,
and the two partial results are merged exactly through their log-sum-exp
(softmax over a concatenation, as FlashInfer's cascade attention does). On a CPU,
decode attention is bound by reading keys/values, so this removes the prefix's
share of that traffic, and the gather buffers no longer hold a copy of the prefix
per item.

Partial attention with its log-sum-exp comes from ATen's CPU flash-attention
kernel (the one ``scaled_dot_product_attention`` dispatches to on a CPU), so this
path is for CPU tensors only.
"""

from __future__ import annotations

import torch


def split_by_first_block(group: list[int], first_blocks: list[int | None]) -> list[list[int]]:
    """Split an attention group so that the most common first block has a group of its own.

    Sequences that computed the same prompt concurrently hold it in different blocks; one
    such item in a group would otherwise leave the group no shared prefix at all.

    Args:
        group: Item indices of one group.
        first_blocks: Per item (indexed by the values of ``group``), the id of its first
            block if a query may attend that block whole, else ``None``.

    Returns:
        ``[group]`` unchanged when no block id is the first of at least two items or all
        items share it; else ``[items with the most common first block, the others]``,
        each in ``group``'s order.
    """
    counts: dict[int, int] = {}
    for i in group:
        block = first_blocks[i]
        if block is not None:
            counts[block] = counts.get(block, 0) + 1
    if not counts:
        return [group]
    common, count = max(counts.items(), key=lambda kv: kv[1])
    if count < 2 or count == len(group):
        return [group]
    return [
        [i for i in group if first_blocks[i] == common],
        [i for i in group if first_blocks[i] != common],
    ]


def shared_prefix_blocks(table: torch.Tensor, limit: int) -> int:
    """Leading block columns every row of ``table`` holds with the same id.

    Args:
        table: ``[n, max_blocks]`` physical block ids per item.
        limit: Most columns to count (blocks every query may fully attend:
            ``min(start_pos) // block_size``).

    Returns:
        The column count, in ``[0, min(limit, max_blocks)]``.
    """
    limit = min(limit, table.shape[1])
    if limit <= 0:
        return 0
    same = (table[:, :limit] == table[:1, :limit]).all(dim=0)
    return int(same.long().cumprod(dim=0).sum())


def attend_partial(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention over part of the keys, with the log-sum-exp needed to merge it later.

    Args:
        query: ``[b, h, q, d]``.
        key: ``[b, h, k, d]``.
        value: ``[b, h, k, d]``.
        mask: Additive mask broadcastable to ``[b, h, q, k]``, or ``None``. Every query
            row must see at least one key (else its log-sum-exp is ``-inf``).
        scale: Softmax scale (``None``: ``d ** -0.5``).

    Returns:
        ``(out [b, h, q, d], lse [b, h, q] fp32)``: softmax-weighted values and the
        natural log of each row's sum of exponentiated scaled scores.
    """
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        query, key, value, 0.0, False, attn_mask=mask, scale=scale
    )
    return out, lse


def merge_partials(
    out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor, lse_b: torch.Tensor
) -> torch.Tensor:
    """Attention over the union of two disjoint key sets from the two partial results.

    Args:
        out_a: ``[..., q, d]`` attention over key set A.
        lse_a: ``[..., q]`` its log-sum-exp.
        out_b: ``[..., q, d]`` attention over key set B.
        lse_b: ``[..., q]`` its log-sum-exp.

    Returns:
        ``[..., q, d]``: ``out_a * exp(lse_a - lse) + out_b * exp(lse_b - lse)`` with
        ``lse = logaddexp(lse_a, lse_b)``.
    """
    lse = torch.logaddexp(lse_a, lse_b)
    weight_a = (lse_a - lse).exp_().unsqueeze(-1).to(out_a.dtype)
    weight_b = (lse_b - lse).exp_().unsqueeze(-1).to(out_b.dtype)
    return torch.addcmul(out_a * weight_a, out_b, weight_b)


def attend_prefix(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    prefix_blocks: torch.Tensor,
    scale: float | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """All of a group's queries attending to its shared prefix blocks, in one call.

    Args:
        query: ``[n, num_kv_heads, rows, head_dim]`` the group's queries (GQA-folded rows).
        key_cache: ``[num_blocks, block_size, num_kv_heads, head_dim]`` the layer's pool.
        value_cache: Same shape as ``key_cache``.
        prefix_blocks: ``[c]`` block ids holding positions ``[0, c * block_size)`` of every
            item; every query may attend all of them (no mask).
        scale: Softmax scale.

    Returns:
        ``(out [n, num_kv_heads, rows, head_dim], lse [n, num_kv_heads, rows])``.
    """
    n, num_kv_heads, rows, head_dim = query.shape
    # [c, bs, H_kv, D] -> [1, H_kv, c * bs, D]
    key = key_cache[prefix_blocks].view(-1, num_kv_heads, head_dim).transpose(0, 1)[None]
    value = value_cache[prefix_blocks].view(-1, num_kv_heads, head_dim).transpose(0, 1)[None]
    q = query.transpose(0, 1).reshape(1, num_kv_heads, n * rows, head_dim)
    out, lse = attend_partial(q, key.contiguous(), value.contiguous(), None, scale)
    out = out.view(num_kv_heads, n, rows, head_dim).transpose(0, 1)
    return out, lse.view(num_kv_heads, n, rows).transpose(0, 1)
