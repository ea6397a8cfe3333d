"""The paged KV block pool: reference counts, chained content hashes, LRU reuse.

A block holds the keys and values of ``block_size`` consecutive positions of one
sequence. A block whose positions are all computed is *sealed*: it gets a chained
content hash (its tokens plus the hash of the block before it, rooted in a salt,
the model version) and enters the hash map, so any later sequence with the same
prefix reuses it instead of recomputing it (automatic prefix caching, as in
vLLM's ``KVCacheManager`` and nano-vllm's ``BlockManager``). A sealed block whose
last reference is released keeps its hash and content and joins an LRU list; it
is evicted (unhashed and handed out again) only when no never-hashed free block
is left, least recently used first.
"""

from __future__ import annotations

import hashlib
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(slots=True)
class Block:
    """One physical KV block.

    Attributes:
        block_id: Index in the pool's KV tensors.
        ref_count: Sequences whose block tables hold it (>= 0).
        hash: Chained content hash once sealed, else ``None``.
        token_ids: Its ``block_size`` token ids once sealed (checked on every hash hit).
    """

    block_id: int
    ref_count: int = 0
    hash: int | None = None
    token_ids: tuple[int, ...] = ()


class BlockPool:
    """``num_blocks`` KV blocks of ``block_size`` tokens with prefix-cache bookkeeping.

    Args:
        num_blocks: Blocks in the pool (>= 1).
        block_size: Tokens per block (>= 1).
        salt: Model version mixed into every hash, so a weight update invalidates the cache.

    Raises:
        ValueError: ``num_blocks`` or ``block_size`` < 1.
    """

    def __init__(self, num_blocks: int, block_size: int, salt: str = ""):
        if num_blocks < 1 or block_size < 1:
            raise ValueError(
                f"need num_blocks >= 1 and block_size >= 1, got {num_blocks}, {block_size}"
            )
        self.num_blocks, self.block_size = num_blocks, block_size
        self.blocks = [Block(i) for i in range(num_blocks)]
        self._free = list(range(num_blocks - 1, -1, -1))  # never-hashed free blocks (a stack)
        self._cached: OrderedDict[int, None] = OrderedDict()  # free sealed blocks, LRU first
        self._by_hash: dict[int, int] = {}
        self.num_evictions = 0
        self.set_salt(salt)

    # -- hashing ----------------------------------------------------------------------------

    def set_salt(self, salt: str) -> None:
        """Start a new hash namespace ``salt``: every sealed block is forgotten (kept in use)."""
        self.root_hash = int.from_bytes(hashlib.blake2b(salt.encode(), digest_size=16).digest())
        for block in self.blocks:
            block.hash, block.token_ids = None, ()
        self._by_hash.clear()
        self._free.extend(reversed(self._cached))
        self._cached.clear()

    def hash_block(self, parent: int | None, token_ids: Sequence[int]) -> int:
        """Chained hash of one full block: 128-bit BLAKE2b of ``parent`` (``None``: the salt
        root) and the block's ``[block_size]`` token ids."""
        assert len(token_ids) == self.block_size
        digest = hashlib.blake2b(digest_size=16)
        digest.update((self.root_hash if parent is None else parent).to_bytes(16))
        digest.update(array("q", token_ids).tobytes())
        return int.from_bytes(digest.digest())

    def lookup(self, block_hash: int, token_ids: Sequence[int]) -> int | None:
        """The sealed block with this hash *and* these token ids (a hash collision is a miss)."""
        block_id = self._by_hash.get(block_hash)
        if block_id is None or self.blocks[block_id].token_ids != tuple(token_ids):
            return None
        return block_id

    def seal(self, block_id: int, block_hash: int, token_ids: Sequence[int]) -> bool:
        """Register a just-filled block under ``block_hash``; False if another block has it."""
        block = self.blocks[block_id]
        assert block.ref_count > 0 and block.hash is None
        if block_hash in self._by_hash:
            return False
        block.hash, block.token_ids = block_hash, tuple(token_ids)
        self._by_hash[block_hash] = block_id
        return True

    def unseal(self, block_id: int) -> None:
        """Drop a held block's hash before it is written again (its content changes)."""
        block = self.blocks[block_id]
        assert block.ref_count > 0
        if block.hash is not None:
            del self._by_hash[block.hash]
            block.hash, block.token_ids = None, ()

    # -- reference counting -----------------------------------------------------------------

    @property
    def num_free_blocks(self) -> int:
        """Blocks no sequence holds (never-hashed plus evictable cached ones)."""
        return len(self._free) + len(self._cached)

    @property
    def num_cached_blocks(self) -> int:
        """Free blocks that still hold a hashed prefix (evictable, LRU order)."""
        return len(self._cached)

    def allocate(self) -> int:
        """A fresh block with one reference; evicts the LRU cached block if no plain one is free.

        Raises:
            RuntimeError: Every block is held (callers check :attr:`num_free_blocks` first).
        """
        if self._free:
            block_id = self._free.pop()
        elif self._cached:
            block_id, _ = self._cached.popitem(last=False)
            block = self.blocks[block_id]
            assert block.hash is not None
            del self._by_hash[block.hash]
            block.hash, block.token_ids = None, ()
            self.num_evictions += 1
        else:
            raise RuntimeError("KV block pool exhausted")
        block = self.blocks[block_id]
        assert block.ref_count == 0
        block.ref_count = 1
        return block_id

    def acquire(self, block_id: int) -> None:
        """One more reference to a held or cached block (a prefix hit or a fork)."""
        block = self.blocks[block_id]
        if block.ref_count == 0:
            assert block.hash is not None, "only sealed free blocks can be acquired"
            del self._cached[block_id]
        block.ref_count += 1

    def release(self, block_id: int) -> None:
        """Drop one reference; at zero a sealed block becomes the most recently used cached one."""
        block = self.blocks[block_id]
        assert block.ref_count > 0, f"block {block_id} released more often than held"
        block.ref_count -= 1
        if block.ref_count == 0:
            if block.hash is None:
                self._free.append(block_id)
            else:
                self._cached[block_id] = None

    def check(self) -> None:
        """Assert the pool's invariants (used by tests): every block is either held or free
        exactly once, and the hash map points at sealed blocks with matching hashes."""
        free = set(self._free)
        assert len(free) == len(self._free) and not free & set(self._cached)
        for block in self.blocks:
            assert block.ref_count >= 0
            is_free = block.block_id in free or block.block_id in self._cached
            assert is_free == (block.ref_count == 0)
            assert (block.block_id in self._cached) <= (block.hash is not None)
            assert (block.block_id in free) <= (block.hash is None)
            if block.hash is not None:
                assert self._by_hash[block.hash] == block.block_id
        assert len(self._by_hash) == sum(b.hash is not None for b in self.blocks)
