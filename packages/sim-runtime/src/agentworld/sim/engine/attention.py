"""Paged attention as a transformers attention function.

:func:`paged_attention` is registered in transformers' ``AttentionInterface``
under :data:`ATTENTION_NAME`. A model whose config names it calls it from every
attention layer with the new tokens' rotary-embedded queries, keys and values.
When the forward pass carries a :class:`PagedBatch` (keyword ``paged``), the
function writes the new keys/values into the layer's block pool, then lets each
item's new queries attend to all its positions through its block table, with a
causal offset. Without one it is plain ``sdpa``, so the model keeps working for
``model.generate`` and training.

Queries of items that attend together form an :class:`AttentionGroup`: keys and
values are gathered through the padded block tables and one
``scaled_dot_product_attention`` call serves the whole group. Grouped-query
attention is handled without repeating keys/values: the ``rep`` query heads that
share a key/value head are folded into the query-length axis (query
``[n, num_heads, q, d]`` -> ``[n, num_kv_heads, rep * q, d]``), the layout of
vLLM's and FlashInfer's GQA decode kernels. Blocks that every item of a group
shares at the start of its context can be attended once for the whole group
(:mod:`agentworld.sim.engine.shared_prefix`); the block table, mask and gather
then cover only the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

from agentworld.sim.engine.gather_cache import GatherPlan
from agentworld.sim.engine.shared_prefix import attend_partial, attend_prefix, merge_partials

ATTENTION_NAME = "agentworld_paged"


@dataclass(slots=True)
class AttentionGroup:
    """Items whose queries attend in one padded SDPA call.

    Attributes:
        query_index: ``[n, max_q]`` packed-token index of each query row; padding rows
            repeat the item's last token.
        block_table: ``[n, max_blocks]`` physical block ids per item after the shared
            prefix (block ``i`` holds positions ``[(c + i) * block_size, ...)``, ``c`` the
            prefix's blocks); padding uses block 0 (masked out).
        mask: ``[n, 1, rep * max_q, max_blocks * block_size]`` additive mask in the model's
            dtype over the positions ``block_table`` covers: 0 where the query row may
            attend the key position (causal, within the item's context), ``-inf``
            elsewhere; the ``max_q`` rows are repeated ``rep = num_heads / num_kv_heads``
            times, except for decode steps (``max_q == 1``), whose one row ``[n, 1, 1,
            ...]`` broadcasts over the ``rep`` rows. ``None`` for a group of decode steps (one query each) over contexts of
            equal length: each query attends its first ``num_keys`` positions, unmasked
            (no mask to build; ``bench/decode_attention.py`` compares SDPA's time with and
            without one).
        out_rows: ``[num_real]`` flat row ``i * max_q + j`` of each real (unpadded) query.
        out_tokens: ``[num_real]`` packed-token index of each real query, same order.
        key_buffer: ``[n * max_blocks, block_size * num_kv_heads * head_dim]`` scratch the
            gathered keys are written to (reused by every layer and group: gathering into
            a warm buffer is ~2x faster on a CPU than allocating a fresh one).
        value_buffer: Same as ``key_buffer``, for values.
        cached: A decode group whose gathered keys/values persist between forward passes
            (:mod:`agentworld.sim.engine.gather_cache`): only its ``src_blocks`` are copied,
            into its own per-layer buffers (``key_buffer``/``value_buffer`` are then unused).
        prefix_blocks: ``[c]`` block ids every item holds first (positions ``[0, c *
            block_size)``), attended once for all the group's queries (CPU only); every
            query row may attend all of them. ``None``: no shared prefix (``c = 0``).
        num_keys: Positions after the shared prefix each query attends when ``mask`` is
            ``None`` (tokens); unused otherwise.
        new_keys: ``[n, max_q]`` index among the gathered keys of each item's new tokens
            when they are attended apart from its past (CPU only; ``mask`` is then the
            past's padding mask ``[n, 1, 1, keys]``); ``None`` otherwise
            (:mod:`agentworld.sim.engine.masks`).
        new_mask: ``[n, 1, rep * max_q, max_q]`` causal mask over ``new_keys``, or ``None``.
    """

    query_index: torch.Tensor
    block_table: torch.Tensor
    mask: torch.Tensor | None
    out_rows: torch.Tensor
    out_tokens: torch.Tensor
    key_buffer: torch.Tensor
    value_buffer: torch.Tensor
    cached: GatherPlan | None = None
    prefix_blocks: torch.Tensor | None = None
    num_keys: int = 0
    new_keys: torch.Tensor | None = None
    new_mask: torch.Tensor | None = None


@dataclass(slots=True)
class PagedBatch:
    """Per-forward state of a packed, paged batch (the same for every layer).

    Attributes:
        key_cache: Per layer ``[num_blocks, block_size, num_kv_heads, head_dim]``.
        value_cache: Per layer, same shape as ``key_cache``.
        slot_mapping: ``[total_tokens]`` pool slot ``block * block_size + offset`` of each
            new token, in packed order.
        groups: Attention groups; together their ``out_tokens`` cover every packed token
            exactly once.
    """

    key_cache: list[torch.Tensor]
    value_cache: list[torch.Tensor]
    slot_mapping: torch.Tensor
    groups: list[AttentionGroup]


def write_kv(
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    """Store new keys/values ``[num_kv_heads, tokens, head_dim]`` at pool slots ``[tokens]``."""
    num_kv_heads, head_dim = key_cache.shape[2], key_cache.shape[3]
    key_cache.view(-1, num_kv_heads, head_dim).index_copy_(0, slot_mapping, key.transpose(0, 1))
    value_cache.view(-1, num_kv_heads, head_dim).index_copy_(
        0, slot_mapping, value.transpose(0, 1)
    )


def attend_group(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    group: AttentionGroup,
    scale: float | None,
    out: torch.Tensor,
    layer: int = 0,
) -> None:
    """Attention of one group's queries over their cached context, written into ``out``.

    Args:
        query: ``[num_heads, total_tokens, head_dim]`` all packed queries of the layer.
        key_cache: ``[num_blocks, block_size, num_kv_heads, head_dim]``, new keys already written.
        value_cache: Same shape as ``key_cache``.
        group: The items to attend (see :class:`AttentionGroup`).
        scale: Softmax scale (``None``: ``head_dim ** -0.5``).
        out: ``[total_tokens, num_heads, head_dim]``; the group's rows are filled in.
        layer: Layer index (selects a cached group's buffers).
    """
    n, max_q = group.query_index.shape
    num_heads, _, head_dim = query.shape
    num_kv_heads = key_cache.shape[2]
    rep = num_heads // num_kv_heads
    # [H, n * max_q, D] -> [n, H_kv, rep * max_q, D]: query head h uses key/value head h // rep.
    q = query.index_select(1, group.query_index.flatten()).view(num_heads, n, max_q, head_dim)
    q = q.transpose(0, 1).reshape(n, num_kv_heads, rep * max_q, head_dim)
    if group.cached is not None:  # copy only the blocks changed since the last pass
        k, v = group.cached.keys_values(layer, key_cache, value_cache)
    else:
        blocks, num_blocks = group.block_table.flatten(), key_cache.shape[0]
        k = torch.index_select(key_cache.view(num_blocks, -1), 0, blocks, out=group.key_buffer)
        v = torch.index_select(value_cache.view(num_blocks, -1), 0, blocks, out=group.value_buffer)
        k = k.view(n, -1, num_kv_heads, head_dim).transpose(1, 2)  # [n, H_kv, max_blocks * bs, D]
        v = v.view(n, -1, num_kv_heads, head_dim).transpose(1, 2)
    if group.mask is None:  # equal contexts, one query each: no padding to mask
        k, v = k[:, :, : group.num_keys], v[:, :, : group.num_keys]
    if group.prefix_blocks is None and group.new_keys is None:
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=group.mask, scale=scale)
    else:  # partial attentions merged through their log-sum-exp (CPU)
        o, lse = attend_partial(q, k, v, group.mask, scale)
        if group.new_keys is not None:  # the new tokens apart from the past
            index = group.new_keys[:, None, :, None].expand(n, num_kv_heads, -1, head_dim)
            o_new, lse_new = attend_partial(
                q, k.gather(2, index), v.gather(2, index), group.new_mask, scale
            )
            o, lse = merge_partials(o, lse, o_new, lse_new), torch.logaddexp(lse, lse_new)
        if group.prefix_blocks is not None:
            o_prefix, lse_prefix = attend_prefix(
                q, key_cache, value_cache, group.prefix_blocks, scale
            )
            o = merge_partials(o_prefix, lse_prefix, o, lse)
    # [n, H_kv, rep * max_q, D] -> [n * max_q, H, D]
    o = o.reshape(n, num_heads, max_q, head_dim).transpose(1, 2).reshape(n * max_q, num_heads, -1)
    out.index_copy_(0, group.out_tokens, o.index_select(0, group.out_rows))


def paged_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    paged: PagedBatch | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """Attention function with transformers' signature (see ``sdpa_attention_forward``).

    Args:
        module: The attention layer; its ``layer_idx`` selects the pool tensors.
        query: ``[1, num_heads, total_tokens, head_dim]``, rotary-embedded.
        key: ``[1, num_kv_heads, total_tokens, head_dim]``, rotary-embedded.
        value: ``[1, num_kv_heads, total_tokens, head_dim]``.
        attention_mask: Ignored with ``paged`` (the runner passes a placeholder).
        scaling: Softmax scale.
        dropout: Must be 0 with ``paged`` (inference only).
        paged: The batch's block pool and metadata; ``None`` delegates to ``sdpa``.

    Returns:
        ``([1, total_tokens, num_heads, head_dim], None)``.

    Raises:
        NotImplementedError: ``paged`` is given for a sliding-window or softcapped layer.
    """
    if paged is None:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
    if kwargs.get("sliding_window") is not None or kwargs.get("softcap") is not None:
        raise NotImplementedError("paged attention supports full causal attention layers only")
    assert query.shape[0] == 1 and dropout == 0.0, "paged batches are one packed row, no dropout"
    layer = module.layer_idx
    key_cache, value_cache = paged.key_cache[layer], paged.value_cache[layer]
    write_kv(key_cache, value_cache, key[0], value[0], paged.slot_mapping)
    q = query[0]
    out = q.new_empty(q.shape[1], q.shape[0], q.shape[2])
    for group in paged.groups:
        attend_group(q, key_cache, value_cache, group, scaling, out, layer)
    return out.unsqueeze(0), None


def unsupported_attention(config: Any) -> str | None:
    """Why :func:`paged_attention` cannot serve a model with this config, or ``None``.

    The paged kernel attends every earlier position of an item: it has no sliding window
    and no logit softcapping, so a model with either (Gemma 2 and 3, Mistral with a
    window) would compute something else. Reads the text config's ``layer_types``
    (transformers' per-layer attention kinds) when it has them, else ``sliding_window``
    with ``use_sliding_window``; and ``attn_logit_softcapping``.

    Args:
        config: A transformers ``PretrainedConfig`` (its text config is read).

    Returns:
        A phrase naming what is unsupported (``"'sliding_attention' in 15 of 18 layers"``),
        or ``None`` when every layer is full causal attention.
    """
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    reasons = []
    kinds = getattr(text, "layer_types", None)
    if kinds:
        other = [kind for kind in kinds if kind != "full_attention"]
        if other:
            reasons.append(f"{other[0]!r} in {len(other)} of {len(kinds)} layers")
    elif getattr(text, "sliding_window", None) and getattr(text, "use_sliding_window", True):
        reasons.append(f"a {text.sliding_window}-token sliding window")
    if getattr(text, "attn_logit_softcapping", None) is not None:
        reasons.append("attention logit softcapping")
    return " and ".join(reasons) or None


def register() -> str:
    """Register :func:`paged_attention` (and ``sdpa`` masks for it); returns its name.

    Idempotent. Masks are those of ``sdpa`` so that, outside a paged batch, a model
    set to this implementation behaves exactly like ``sdpa`` (padding included).
    """
    AttentionInterface.register(ATTENTION_NAME, paged_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION_NAME, sdpa_mask)
    return ATTENTION_NAME
