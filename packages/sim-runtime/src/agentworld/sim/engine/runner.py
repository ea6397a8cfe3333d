"""The model runner: packed forward passes of a Hugging Face causal LM over a paged KV cache.

Every call to :meth:`ModelRunner.forward` concatenates the new tokens of all
items (prefill chunks and decode tokens) into one row ``[1, total_tokens]`` with
explicit ``position_ids``, so the projections and MLP see no padding. Attention
goes through :mod:`agentworld.sim.engine.attention`, which reads and writes a
block pool owned by the runner; only the hidden states whose logits are needed
reach the LM head.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from transformers import PretrainedConfig, PreTrainedModel

from agentworld.sim.engine.attention import AttentionGroup, PagedBatch, register
from agentworld.sim.engine.gather_cache import GatherCache
from agentworld.sim.engine.masks import group_masks
from agentworld.sim.engine.shared_prefix import shared_prefix_blocks, split_by_first_block

# Padding an attention group is accepted while its padded score count stays within
# PAD_SLACK x the real count plus PAD_ALLOWANCE scores (an extra SDPA call costs more
# than that much padding on a CPU).
PAD_SLACK = 2.0
PAD_ALLOWANCE = 32768


@dataclass(slots=True)
class ForwardItem:
    """New tokens of one sequence to run in a packed forward pass.

    Attributes:
        token_ids: New tokens ``[num_new]`` (a prefill chunk, or 1 decode token); ``num_new >= 1``.
        start_pos: Tokens of this sequence already in the KV cache, i.e. the position of
            ``token_ids[0]``.
        block_table: Physical block ids ``[num_blocks]``; block ``i`` holds positions
            ``[i * block_size, (i + 1) * block_size)``. Covers at least positions
            ``[0, start_pos + num_new)``. The engine passes its sequence's int64 array
            (:meth:`~agentworld.sim.engine.block_table.BlockTable.view`, copied into the
            padded group table by one ``memcpy``); a list works too.
        need_logits: Return logits for the last new token (False for a non-final prefill chunk).
    """

    token_ids: list[int]
    start_pos: int
    block_table: Sequence[int] | np.ndarray
    need_logits: bool


def kv_shape(config: PretrainedConfig) -> tuple[int, int, int, int]:
    """``(num_layers, num_heads, num_kv_heads, head_dim)`` of a decoder config."""
    config = config.get_text_config()
    num_heads = config.num_attention_heads
    num_kv_heads = getattr(config, "num_key_value_heads", None) or num_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // num_heads
    return config.num_hidden_layers, num_heads, num_kv_heads, head_dim


def plan_groups(q_lens: Sequence[int], ctx_lens: Sequence[int]) -> list[list[int]]:
    """Split items into attention groups that share one padded SDPA call.

    Items are taken by increasing ``(q_len, ctx_len)``; an item joins the current group
    while the group's padded score count ``n * max_q * max_ctx`` stays within
    ``PAD_SLACK * sum(q * ctx) + PAD_ALLOWANCE``. Decode steps (``q_len == 1``) thus
    batch together, and short prefill chunks of similar size batch together.

    Args:
        q_lens: New tokens per item (tokens).
        ctx_lens: Context per item after this step, ``start_pos + q_len`` (tokens).

    Returns:
        Lists of item indices; every index appears once.
    """
    order = sorted(range(len(q_lens)), key=lambda i: (q_lens[i], ctx_lens[i]))
    groups: list[list[int]] = []
    max_q = max_ctx = real = 0
    for i in order:
        q, ctx = q_lens[i], ctx_lens[i]
        if groups:
            n = len(groups[-1]) + 1
            padded = n * max(max_q, q) * max(max_ctx, ctx)
            if padded <= PAD_SLACK * (real + q * ctx) + PAD_ALLOWANCE:
                groups[-1].append(i)
                max_q, max_ctx, real = max(max_q, q), max(max_ctx, ctx), real + q * ctx
                continue
        groups.append([i])
        max_q, max_ctx, real = q, ctx, q * ctx
    return groups


class ModelRunner:
    """Runs packed forward passes of ``model`` over a paged KV cache it owns.

    The pool holds, per layer, keys and values ``[num_blocks, block_size, num_kv_heads,
    head_dim]`` in the model's dtype and device. The model is switched to the
    ``agentworld_paged`` attention implementation, which behaves as ``sdpa`` outside
    this runner's forward passes (``model.generate`` keeps working).

    Args:
        model: A causal LM using transformers' attention interface (Qwen3, Llama, ...),
            in eval mode.
        num_blocks: Blocks in the pool (> 0).
        block_size: Tokens per block (> 0).
        reuse_gathers: Keep decode groups' gathered keys/values between forward passes and
            copy only changed blocks (:mod:`agentworld.sim.engine.gather_cache`); costs up to
            twice the pool's size in memory. ``None``: on for a CPU device, off otherwise.
        share_prefix: Attend the leading blocks that all items of a group share once for
            the whole group (:mod:`agentworld.sim.engine.shared_prefix`). ``None``: on for a
            CPU device, off otherwise.

    Raises:
        ValueError: ``num_blocks`` or ``block_size`` is not positive, or ``share_prefix``
            is asked for on another device than a CPU.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        *,
        num_blocks: int,
        block_size: int = 16,
        reuse_gathers: bool | None = None,
        share_prefix: bool | None = None,
    ):
        if num_blocks < 1 or block_size < 1:
            raise ValueError(
                f"num_blocks and block_size must be >= 1, got {num_blocks} and {block_size}"
            )
        num_layers, num_heads, num_kv_heads, head_dim = kv_shape(model.config)
        assert num_heads % num_kv_heads == 0, "query heads must be a multiple of key/value heads"
        self.model = model
        self.num_blocks, self.block_size = num_blocks, block_size
        self.rep = num_heads // num_kv_heads
        self.device, self.dtype = model.device, model.dtype
        if share_prefix is None:
            share_prefix = self.device.type == "cpu"
        if share_prefix and self.device.type != "cpu":
            raise ValueError(f"share_prefix needs a CPU model, not {self.device.type}")
        self.share_prefix = share_prefix
        shape = (num_blocks, block_size, num_kv_heads, head_dim)
        pool = dict(dtype=self.dtype, device=self.device)
        self.key_cache = [torch.zeros(shape, **pool) for _ in range(num_layers)]
        self.value_cache = [torch.zeros(shape, **pool) for _ in range(num_layers)]
        # A 4D attention_mask is taken as prepared: transformers then builds no mask.
        self._mask_placeholder = torch.ones(1, 1, 1, 1, dtype=torch.bool, device=self.device)
        self._block_numel = block_size * num_kv_heads * head_dim
        self._gather_buffer = torch.empty(0, dtype=self.dtype, device=self.device)
        # Content version of every block, bumped whenever the block is written.
        self._versions = torch.zeros(num_blocks, dtype=torch.long)
        if reuse_gathers is None:
            reuse_gathers = self.device.type == "cpu"
        itemsize = self.key_cache[0].element_size()
        # Items sharing prefix blocks hold their own copies: allow up to twice the pool.
        pool_bytes = 2 * 2 * num_layers * num_blocks * self._block_numel * itemsize
        self._gather_cache = (
            GatherCache(
                num_layers, block_size, num_kv_heads, head_dim, self.dtype, self.device, pool_bytes
            )
            if reuse_gathers
            else None
        )
        self.gathered_blocks = 0  # blocks copied per layer by the last forward pass's gathers
        self.shared_blocks = 0  # shared prefix blocks the last forward pass's groups read once
        model.set_attn_implementation(register())

    @staticmethod
    def kv_bytes_per_block(config: PretrainedConfig, block_size: int, dtype: torch.dtype) -> int:
        """Bytes of keys plus values one block holds across all layers.

        ``2 * num_layers * block_size * num_kv_heads * head_dim * dtype.itemsize``.
        """
        num_layers, _, num_kv_heads, head_dim = kv_shape(config)
        return 2 * num_layers * block_size * num_kv_heads * head_dim * dtype.itemsize

    @torch.inference_mode()
    def forward(self, items: Sequence[ForwardItem]) -> torch.Tensor:
        """Runs all items as one packed forward pass and writes their keys/values to the pool.

        Args:
            items: Sequences to advance; new tokens of different items must go to
                different pool slots.

        Returns:
            fp32 logits ``[num items with need_logits, vocab]``, in item order.
        """
        assert items, "forward needs at least one item"
        token_ids, positions, batch, logits_index = self.prepare(items)
        try:
            out = self.model(
                input_ids=token_ids[None],
                position_ids=positions[None],
                attention_mask=self._mask_placeholder,
                use_cache=False,
                logits_to_keep=logits_index,
                paged=batch,
            )
        except BaseException:
            if self._gather_cache is not None:  # some layers' buffers may be behind
                self._gather_cache.clear()
            raise
        if self._gather_cache is not None:
            self._gather_cache.commit()
        return out.logits[0].float()

    def prepare(
        self, items: Sequence[ForwardItem]
    ) -> tuple[torch.Tensor, torch.Tensor, PagedBatch, torch.Tensor]:
        """Packed ``token_ids [total]``, ``positions [total]``, the :class:`PagedBatch`
        and the packed index ``[num with need_logits]`` of each last token needing logits."""
        bs = self.block_size
        token_ids: list[int] = []
        positions: list[int] = []
        slot_parts: list[np.ndarray] = []
        offsets: list[int] = []
        logits_index: list[int] = []
        for item in items:
            end = item.start_pos + len(item.token_ids)
            table = np.asarray(item.block_table, dtype=np.int64)  # no copy from a BlockTable
            assert len(item.token_ids) >= 1 and item.start_pos >= 0, "an item needs new tokens"
            assert len(table) * bs >= end, "block table does not cover the item's positions"
            offsets.append(len(token_ids))
            token_ids += item.token_ids
            positions += range(item.start_pos, end)
            new = np.arange(item.start_pos, end)
            slot_parts.append(table[new // bs] * bs + new % bs)
            if item.need_logits:
                logits_index.append(len(token_ids) - 1)
        slots = np.concatenate(slot_parts)
        written = np.unique(slots // bs)
        assert len(np.unique(slots)) == len(slots), "two new tokens map to the same pool slot"
        assert written[0] >= 0 and written[-1] < self.num_blocks, "block id outside the pool"
        self._versions[torch.from_numpy(written)] += 1  # written by this pass
        q_lens = [len(item.token_ids) for item in items]
        ctx_lens = [item.start_pos + q for item, q in zip(items, q_lens)]
        plan = plan_groups(q_lens, ctx_lens)
        if self.share_prefix:
            first = [int(item.block_table[0]) if item.start_pos >= bs else None for item in items]
            plan = [part for g in plan for part in split_by_first_block(g, first)]
        rows = max(len(g) * -(-max(ctx_lens[i] for i in g) // bs) for g in plan)
        if self._gather_buffer.numel() < 2 * rows * self._block_numel:
            self._gather_buffer = self._gather_buffer.new_empty(2 * rows * self._block_numel)
        # The cache serves the largest group (the first of equal ones): the decode group, or
        # the same sequences' prefill chunks when an environment step starts for all of them.
        largest = max(range(len(plan)), key=lambda k: (len(plan[k]), -k))
        groups = [
            self._group(
                [items[i] for i in g],
                [offsets[i] for i in g],
                self._gather_cache if k == largest else None,
            )
            for k, g in enumerate(plan)
        ]
        self.gathered_blocks = sum(
            (g.cached.src_blocks.numel() if g.cached is not None else g.block_table.numel())
            for g in groups
        )
        self.shared_blocks = sum(
            g.prefix_blocks.numel() for g in groups if g.prefix_blocks is not None
        )
        slot_ids = torch.from_numpy(slots).to(self.device)
        batch = PagedBatch(self.key_cache, self.value_cache, slot_ids, groups)
        return self._tensor(token_ids), self._tensor(positions), batch, self._tensor(logits_index)

    def _group(
        self, items: list[ForwardItem], offsets: list[int], cache: GatherCache | None
    ) -> AttentionGroup:
        bs = self.block_size
        q_lens = torch.tensor([len(item.token_ids) for item in items])
        start = torch.tensor([item.start_pos for item in items])
        num_blocks = [-(-(item.start_pos + len(item.token_ids)) // bs) for item in items]
        max_blocks, max_q = max(num_blocks), int(q_lens.max())
        # Filled through numpy: torch.tensor of nested lists costs ~5x more, and this runs in
        # every forward pass over every block of every item (issue 35, item 3).
        rows = np.zeros((len(items), max_blocks), dtype=np.int64)
        for r, (item, nb) in enumerate(zip(items, num_blocks)):
            rows[r, :nb] = item.block_table[:nb]
        # Checked here, vectorised, on exactly the blocks the group reads (a Python min/max
        # over every table in every pass cost as much as the rest of this method).
        assert rows.min() >= 0 and rows.max() < self.num_blocks, "block id outside the pool"
        table = torch.from_numpy(rows)
        # Leading blocks all items share, before any item's first query: attended once.
        skip = 0
        if self.share_prefix and len(items) > 1:
            skip = shared_prefix_blocks(table, min(item.start_pos for item in items) // bs)
        prefix, table = table[0, :skip], table[:, skip:].contiguous()
        j = torch.arange(max_q)
        last = torch.minimum(j[None, :], q_lens[:, None] - 1)  # padding rows repeat the last query
        query_index = torch.tensor(offsets)[:, None] + last
        num_keys = (max_blocks - skip) * bs
        masks = group_masks(start, q_lens, skip * bs, num_keys, self.rep, self.dtype,
                            split=self.device.type == "cpu")
        out_rows = (j[None, :] < q_lens[:, None]).flatten().nonzero().squeeze(1)
        out_tokens = query_index.flatten()[out_rows]
        cached = None
        if cache is not None:
            valid = torch.arange(skip, max_blocks)[None, :] < torch.tensor(num_blocks)[:, None]
            cached = cache.plan(table, valid, self._versions)
        to = self.device
        size = table.numel() * self._block_numel
        buffers = self._gather_buffer[: 2 * size].view(2, table.numel(), -1)
        return AttentionGroup(
            query_index.to(to),
            table.to(to),
            None if masks.mask is None else masks.mask.to(to),
            out_rows.to(to),
            out_tokens.to(to),
            key_buffer=buffers[0],
            value_buffer=buffers[1],
            cached=cached,
            prefix_blocks=prefix.to(to) if skip else None,
            num_keys=int((start + q_lens).max()) - skip * bs,
            new_keys=None if masks.new_keys is None else masks.new_keys.to(to),
            new_mask=None if masks.new_mask is None else masks.new_mask.to(to),
        )

    def _tensor(self, values: list[int]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.long, device=self.device)

    @torch.inference_mode()
    def copy_block(self, src: int, dst: int) -> None:
        """Copy block ``src``'s keys and values into block ``dst`` in every layer
        (copy-on-write of a partly filled block)."""
        assert 0 <= src < self.num_blocks and 0 <= dst < self.num_blocks and src != dst
        for cache in (*self.key_cache, *self.value_cache):
            cache[dst].copy_(cache[src])
        self._versions[dst] += 1
