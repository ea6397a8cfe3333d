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

The cache trades memory for bandwidth: it holds a second copy of the cached group's
keys and values (``2 * num_layers * n * max_blocks * block_size * num_kv_heads *
head_dim`` elements), and declines (:meth:`GatherCache.plan` returns ``None``) when
that would exceed its byte limit.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(slots=True)
class GatherPlan:
    """What one forward pass must copy into a cached group's buffers.

    Attributes:
        keys: Per layer ``[n * max_blocks, block_size * num_kv_heads * head_dim]``: the
            group's gathered keys, row ``i * max_blocks + j`` = block ``j`` of item ``i``.
        values: Same as ``keys``, for values.
        src_blocks: ``[m]`` pool block ids to copy (after this pass's new keys/values are written).
        dst_rows: ``[m]`` buffer rows they are copied to.
    """

    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    src_blocks: torch.Tensor
    dst_rows: torch.Tensor


class GatherCache:
    """Gathered keys/values of one decode group, kept across forward passes.

    Args:
        num_layers: Layers of the model (one key and one value buffer each).
        block_numel: Elements per block per layer, ``block_size * num_kv_heads * head_dim``.
        dtype: Pool dtype.
        device: Pool device.
        max_bytes: Largest total size of the buffers (bytes).
    """

    def __init__(
        self,
        num_layers: int,
        block_numel: int,
        dtype: torch.dtype,
        device: torch.device,
        max_bytes: int,
    ):
        self.num_layers, self.block_numel = num_layers, block_numel
        self.dtype, self.device, self.max_bytes = dtype, device, max_bytes
        self.table: torch.Tensor | None = None  # [n, max_blocks] ids held; -1 = nothing valid
        self.versions: torch.Tensor | None = None  # [n, max_blocks] their versions when copied
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self._pending: tuple[torch.Tensor, torch.Tensor] | None = None

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

        Args:
            table: ``[n, max_blocks]`` physical block ids per item (padding: any id).
            valid: ``[n, max_blocks]`` True where the block is part of the item's context.
            versions: ``[num_blocks]`` current content version of every pool block, this
                forward pass's writes already counted.

        Returns:
            The :class:`GatherPlan`, or ``None`` (nothing cached) when the buffers would
            exceed ``max_bytes``. Call :meth:`commit` once the forward pass has run it (a
            plan never run is simply superseded by the next one).
        """
        n, max_blocks = table.shape
        itemsize = torch.empty(0, dtype=self.dtype).element_size()
        if 2 * self.num_layers * n * max_blocks * self.block_numel * itemsize > self.max_bytes:
            self.clear()
            return None
        current = torch.where(valid, versions[table], -1)
        if self.table is None or self.table.shape[0] != n:
            self._allocate(n, max_blocks)
        elif self.table.shape[1] != max_blocks:
            self._resize(max_blocks)
        assert self.table is not None and self.versions is not None
        dirty = valid & ((self.table != table) | (self.versions != current))
        self._pending = (torch.where(valid, table, -1), current)
        rows = dirty.flatten().nonzero().squeeze(1)
        src = table.flatten()[rows]
        return GatherPlan(self.keys, self.values, src.to(self.device), rows.to(self.device))

    def _allocate(self, n: int, max_blocks: int) -> None:
        # Zero-filled: padding rows are read (then masked) by attention, so they must be finite.
        shape = (n * max_blocks, self.block_numel)
        make = lambda: torch.zeros(shape, dtype=self.dtype, device=self.device)
        self.keys = [make() for _ in range(self.num_layers)]
        self.values = [make() for _ in range(self.num_layers)]
        self.table = torch.full((n, max_blocks), -1, dtype=torch.long)
        self.versions = torch.full((n, max_blocks), -1, dtype=torch.long)
        self._pending = None

    def _resize(self, max_blocks: int) -> None:
        """Change the blocks per item, keeping every item's leading blocks in place."""
        assert self.table is not None and self.versions is not None
        n, old = self.table.shape
        keep = min(old, max_blocks)
        like = {"dtype": self.dtype, "device": self.device}
        for buffers in (self.keys, self.values):
            for i, buf in enumerate(buffers):
                new = torch.zeros(n * max_blocks, self.block_numel, **like)
                new.view(n, max_blocks, -1)[:, :keep] = buf.view(n, old, -1)[:, :keep]
                buffers[i] = new
        table = torch.full((n, max_blocks), -1, dtype=torch.long)
        versions = torch.full((n, max_blocks), -1, dtype=torch.long)
        table[:, :keep], versions[:, :keep] = self.table[:, :keep], self.versions[:, :keep]
        self.table, self.versions, self._pending = table, versions, None
