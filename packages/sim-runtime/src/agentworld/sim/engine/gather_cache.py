"""Reuse of gathered keys/values between decode iterations (the CPU attention path).

On a CPU, attention gathers each item's blocks from the pool into a contiguous
buffer, in every layer (:func:`agentworld.sim.engine.attention.attend_group`). For
decoding sequences that copy is as much memory traffic as the attention itself, yet
between two iterations over the same sequences only a few blocks change: each
sequence's last block gains one token, and a new block starts every ``block_size``
tokens. A :class:`GatherCache` keeps one decode group's gathered buffers, per layer,
from one forward pass to the next and copies only the blocks whose id or content
changed: a block's content is identified by a version number the runner bumps
whenever it writes into that block.

The buffers are head-major (``[n, num_kv_heads, positions, head_dim]`` per layer), so
attention reads them as contiguous rows. The cache trades memory for bandwidth: it holds
a second copy of the cached group's keys and values (``2 * num_layers * n * capacity *
block_size * num_kv_heads * head_dim`` elements, ``capacity`` = the longest item's
blocks plus half as many spare ones, at least ``SLACK_BLOCKS``), and declines
(:meth:`GatherCache.plan` returns ``None``) when that would exceed its byte limit.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


PATIENCE = 8  # plans with another group size before the buffers are re-laid out for it
SLACK_BLOCKS = 8  # fewest spare blocks per item allocated on growth
GROWTH = 0.5  # spare blocks per item on growth, as a share of the blocks needed


@dataclass(slots=True)
class GatherPlan:
    """What one forward pass must copy into a cached group's buffers.

    Attributes:
        keys: Per layer ``[n, num_kv_heads, capacity, block_size, head_dim]``: the group's
            gathered keys, head-major so that ``[n, num_kv_heads, positions, head_dim]`` is
            a view (no copy) for attention.
        values: Same as ``keys``, for values.
        src_blocks: ``[m]`` pool block ids to copy (after this pass's new keys/values are written).
        dst_index: ``[m * num_kv_heads]`` buffer rows (of ``block_size * head_dim`` elements)
            receiving them: ``(item * num_kv_heads + head) * capacity + block``, head fastest.
        num_positions: Positions attention reads per item, ``max_blocks * block_size``.
    """

    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    src_blocks: torch.Tensor
    dst_index: torch.Tensor
    num_positions: int

    def keys_values(
        self, layer: int, key_cache: torch.Tensor, value_cache: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Copy this pass's changed blocks of ``layer`` from the pool, then return the group's
        keys and values ``[n, num_kv_heads, num_positions, head_dim]`` (views of the buffers).

        Args:
            layer: Layer index.
            key_cache: The layer's pool ``[num_blocks, block_size, num_kv_heads, head_dim]``.
            value_cache: Same shape, values.
        """
        out = []
        for buffers, cache in ((self.keys, key_cache), (self.values, value_cache)):
            buf = buffers[layer]
            n, heads, capacity, block_size, head_dim = buf.shape
            if self.src_blocks.numel():
                # Block b of item i, head h -> buffer row (i * heads + h) * capacity + b.
                blocks = cache[self.src_blocks].transpose(1, 2).reshape(-1, block_size * head_dim)
                buf.view(-1, block_size * head_dim).index_copy_(0, self.dst_index, blocks)
            flat = buf.view(n, heads, capacity * block_size, head_dim)
            out.append(flat[:, :, : self.num_positions])
        return out[0], out[1]


def _slack(max_blocks: int) -> int:
    """Spare blocks per item when the buffers are (re)laid out for ``max_blocks``: growing
    geometrically keeps the copies a growth makes to a constant share of the copying."""
    return max(SLACK_BLOCKS, int(GROWTH * max_blocks))


class GatherCache:
    """Gathered keys/values of one decode group, kept across forward passes.

    Args:
        num_layers: Layers of the model (one key and one value buffer each).
        block_size: Tokens per block.
        num_kv_heads: Key/value heads.
        head_dim: Elements per head.
        dtype: Pool dtype.
        device: Pool device.
        max_bytes: Largest total size of the buffers (bytes).
    """

    def __init__(
        self,
        num_layers: int,
        block_size: int,
        num_kv_heads: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device,
        max_bytes: int,
    ):
        self.num_layers, self.block_size = num_layers, block_size
        self.num_kv_heads, self.head_dim = num_kv_heads, head_dim
        self.dtype, self.device, self.max_bytes = dtype, device, max_bytes
        self.table: torch.Tensor | None = None  # [n, capacity] ids held; -1 = nothing valid
        self.versions: torch.Tensor | None = None  # [n, capacity] their versions when copied
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self._pending: tuple[torch.Tensor, torch.Tensor] | None = None
        self._misses = 0

    def clear(self) -> None:
        """Forget everything (the buffers' contents can no longer be trusted)."""
        self.table = self.versions = self._pending = None
        self.keys, self.values = [], []

    def commit(self) -> None:
        """The last :meth:`plan` was carried out in every layer: its layout is now held."""
        if self._pending is not None:
            self.table, self.versions = self._pending
            self._pending = None

    def plan(
        self, table: torch.Tensor, valid: torch.Tensor, versions: torch.Tensor
    ) -> GatherPlan | None:
        """Adopt ``table`` as the group's layout and list the blocks to (re)copy.

        A group of another size than the cached one is served by a plain gather (``None``)
        unless that size persists for ``PATIENCE`` plans: the few passes where a batch of
        prefills joins or leaves the decode group do not discard the cache.

        Args:
            table: ``[n, max_blocks]`` physical block ids per item (padding: any id).
            valid: ``[n, max_blocks]`` True where the block is part of the item's context.
            versions: ``[num_blocks]`` current content version of every pool block, this
                forward pass's writes already counted.

        Returns:
            The :class:`GatherPlan`, or ``None`` (gather as usual). Call :meth:`commit` once
            the forward pass has run it (a plan never run is superseded by the next one).
        """
        n, max_blocks = table.shape
        if self.table is None or self.table.shape[0] != n:
            self._misses += 1
            if self.table is not None and self._misses < PATIENCE:
                return None
            # With slack if it fits, else exactly (near the byte limit).
            if not any(self._allocate(n, max_blocks + k) for k in (_slack(max_blocks), 0)):
                return None
        elif self.table.shape[1] < max_blocks:
            if not any(self._grow(max_blocks + k) for k in (_slack(max_blocks), 0)):
                self.clear()
                return None
        self._misses = 0
        assert self.table is not None and self.versions is not None
        capacity = self.table.shape[1]
        # Only the first max_blocks columns can change; the rest keep whatever they held
        # (finite, and masked out), as do blocks past an item's context.
        held, held_versions = self.table[:, :max_blocks], self.versions[:, :max_blocks]
        current = versions[table]
        dirty = valid & ((held != table) | (held_versions != current))
        new_table, new_versions = self.table.clone(), self.versions.clone()
        new_table[:, :max_blocks] = torch.where(valid, table, held)
        new_versions[:, :max_blocks] = torch.where(valid, current, held_versions)
        self._pending = (new_table, new_versions)
        rows, cols = dirty.nonzero(as_tuple=True)
        heads = torch.arange(self.num_kv_heads)
        dst = ((rows[:, None] * self.num_kv_heads + heads[None, :]) * capacity + cols[:, None])
        to = self.device
        return GatherPlan(
            self.keys,
            self.values,
            table[rows, cols].to(to),
            dst.flatten().to(to),
            max_blocks * self.block_size,
        )

    def _nbytes(self, n: int, capacity: int) -> int:
        itemsize = torch.empty(0, dtype=self.dtype).element_size()
        per_block = self.block_size * self.num_kv_heads * self.head_dim * itemsize
        return 2 * self.num_layers * n * capacity * per_block

    def _buffer(self, n: int, capacity: int, keep: torch.Tensor | None = None) -> torch.Tensor:
        """A zero-filled buffer (positions past an item's context are read, then masked: they
        must be finite) whose leading blocks are ``keep``'s."""
        shape = (n, self.num_kv_heads, capacity, self.block_size, self.head_dim)
        if keep is None:
            return torch.zeros(shape, dtype=self.dtype, device=self.device)
        buf = torch.empty(shape, dtype=self.dtype, device=self.device)
        old = keep.shape[2]
        buf[:, :, :old] = keep
        buf[:, :, old:] = 0
        return buf

    @staticmethod
    def _ids(n: int, capacity: int, keep: torch.Tensor | None = None) -> torch.Tensor:
        """``[n, capacity]`` of -1 (nothing held), the leading columns ``keep``'s."""
        ids = torch.full((n, capacity), -1, dtype=torch.long)
        if keep is not None:
            ids[:, : keep.shape[1]] = keep
        return ids

    def _allocate(self, n: int, capacity: int) -> bool:
        self.clear()
        if self._nbytes(n, capacity) > self.max_bytes:
            return False
        self.keys = [self._buffer(n, capacity) for _ in range(self.num_layers)]
        self.values = [self._buffer(n, capacity) for _ in range(self.num_layers)]
        self.table, self.versions = self._ids(n, capacity), self._ids(n, capacity)
        return True

    def _grow(self, capacity: int) -> bool:
        """More blocks per item, keeping every item's blocks in place."""
        assert self.table is not None and self.versions is not None
        n = self.table.shape[0]
        if self._nbytes(n, capacity) > self.max_bytes:
            return False
        self.keys = [self._buffer(n, capacity, buf) for buf in self.keys]
        self.values = [self._buffer(n, capacity, buf) for buf in self.values]
        self.table = self._ids(n, capacity, self.table)
        self.versions = self._ids(n, capacity, self.versions)
        self._pending = None
        return True
