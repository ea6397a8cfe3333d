"""Continuous batching under a token budget, with admission control and preemption.

Each :meth:`Scheduler.schedule` call builds one forward pass of at most
``max_num_batched_tokens`` tokens: first the running sequences in admission order
(one decode token each, or the next prefill chunk), then waiting sequences
admitted first-come first-served, each after pulling in its hashed prefix
blocks. A waiting sequence whose next block to compute is one that another
sequence computes in this pass waits for the next pass, where that block is
cached (SGLang's in-batch prefix caching): episodes opened together share
their system prompt's blocks instead of each computing a copy. A sequence
runs only if the blocks for its tokens can be had; when memory runs short
the free blocks go first (never-hashed ones, then cached ones least recently
used first), then the scheduler preempts, in this order,
the longest-idle pinned episode, a waiting sequence holding blocks (newest
first) and, for a running sequence only, the most recently admitted running
one, which is recomputed when readmitted (vLLM's recompute preemption). A
request that fits the whole pool alone therefore always progresses: the
oldest running sequence can take every block.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field

from agentworld.sim.engine.blocks import BlockPool
from agentworld.sim.engine.sequence import Sequence, SequenceStatus


@dataclass(slots=True)
class ScheduledBatch:
    """One forward pass: ``num_tokens[i]`` new tokens of ``seqs[i]``, after the block
    ``copies`` (``(src, dst)`` copy-on-write pairs) are applied."""

    seqs: list[Sequence] = field(default_factory=list)
    num_tokens: list[int] = field(default_factory=list)
    copies: list[tuple[int, int]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.seqs)


class Scheduler:
    """Queues of sequences and the block bookkeeping of their KV.

    Args:
        pool: The block pool the sequences' KV lives in.
        max_num_batched_tokens: Token budget of one forward pass (tokens, >= 1).
        max_num_seqs: Most sequences running at once (>= 1).
        enable_prefix_caching: Seal full blocks and reuse hashed prefixes.
        watermark: Fraction of the pool kept free when admitting a new sequence while
            others run, so running ones can grow without preemption (vLLM's 1 % default).

    Raises:
        ValueError: ``max_num_batched_tokens`` or ``max_num_seqs`` < 1.
    """

    def __init__(
        self,
        pool: BlockPool,
        *,
        max_num_batched_tokens: int = 2048,
        max_num_seqs: int = 256,
        enable_prefix_caching: bool = True,
        watermark: float = 0.01,
    ):
        if max_num_batched_tokens < 1 or max_num_seqs < 1:
            raise ValueError(
                "max_num_batched_tokens and max_num_seqs must be >= 1, got "
                f"{max_num_batched_tokens}, {max_num_seqs}"
            )
        self.pool, self.block_size = pool, pool.block_size
        self.max_num_batched_tokens, self.max_num_seqs = max_num_batched_tokens, max_num_seqs
        self.enable_prefix_caching = enable_prefix_caching
        self.watermark_blocks = int(watermark * pool.num_blocks)
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.idle: OrderedDict[str, Sequence] = OrderedDict()  # pinned, longest idle first
        self.num_steps = self.num_preemptions = 0
        self.num_prompt_tokens = self.num_cached_tokens = 0

    def has_work(self) -> bool:
        """True while some request is waiting or running."""
        return bool(self.waiting or self.running)

    # -- lifecycle ----------------------------------------------------------------------

    def add(self, seq: Sequence) -> None:
        """Queue a sequence whose request was just started (``IDLE``/``PREEMPTED``/new ->
        ``WAITING``)."""
        assert seq.status is SequenceStatus.WAITING
        self.idle.pop(seq.seq_id, None)
        self.waiting.append(seq)

    def truncate(self, seq: Sequence, num_tokens: int) -> None:
        """Keep the KV of only the first ``num_tokens`` tokens of a sequence not in flight."""
        assert not seq.in_flight and 0 <= num_tokens <= seq.num_computed_tokens
        keep = -(-num_tokens // self.block_size)
        self._release(seq.block_table[keep:])
        del seq.block_table[keep:]
        del seq.block_hashes[num_tokens // self.block_size :]
        seq.num_computed_tokens = num_tokens

    def finish(self, seq: Sequence) -> None:
        """Its request is done: ``RUNNING`` -> ``IDLE`` (pinned episode) or ``FINISHED``."""
        assert seq.status is SequenceStatus.RUNNING
        if not seq.pinned:
            self.remove(seq)
            return
        self.running.remove(seq)
        seq.status = SequenceStatus.IDLE
        self.idle[seq.seq_id] = seq

    def remove(self, seq: Sequence) -> None:
        """Drop a sequence in any state and release its blocks (-> ``FINISHED``)."""
        self._drop(seq)
        seq.status = SequenceStatus.FINISHED

    def abort(self, seq: Sequence) -> None:
        """Drop a failed request and release its KV: a pinned episode -> ``PREEMPTED`` (it
        recomputes at its next request), an episode-less one -> ``FINISHED``."""
        self._drop(seq)
        seq.status = SequenceStatus.PREEMPTED if seq.pinned else SequenceStatus.FINISHED

    def fork(self, parent: Sequence, child: Sequence) -> None:
        """``child`` (a copy of an idle or preempted ``parent``) shares the parent's blocks."""
        assert not parent.in_flight and child.block_table == parent.block_table
        for block_id in child.block_table:
            self.pool.acquire(block_id)
        child.status = parent.status
        if child.status is SequenceStatus.IDLE:
            self.idle[child.seq_id] = child

    def preempt(self, seq: Sequence) -> None:
        """Release a sequence's KV; it is recomputed later. ``RUNNING`` -> ``WAITING`` (front
        of the queue), ``IDLE`` -> ``PREEMPTED``, ``WAITING`` stays."""
        self._release(seq.block_table)
        seq.block_table.clear()
        seq.num_computed_tokens = 0
        if seq.status is SequenceStatus.RUNNING:
            self.running.remove(seq)
            seq.status = SequenceStatus.WAITING
            self.waiting.appendleft(seq)
        elif seq.status is SequenceStatus.IDLE:
            del self.idle[seq.seq_id]
            seq.status = SequenceStatus.PREEMPTED
        self.num_preemptions += 1

    # -- one iteration ------------------------------------------------------------------

    def schedule(self) -> ScheduledBatch:
        """Pick this iteration's tokens and give them blocks (see the module docstring)."""
        self.num_steps += 1
        batch, budget = ScheduledBatch(), self.max_num_batched_tokens
        computing: set[int | None] = set()  # hashes of the full blocks this pass computes first
        i = 0
        preempted = False
        while i < len(self.running) and budget > 0:
            seq = self.running[i]
            n = min(seq.num_uncomputed_tokens, budget)
            assert n > 0
            if not self._make_room(seq, n, reserve=0, running_victims=True):
                self.preempt(seq)  # only earlier, already scheduled sequences hold the rest
                preempted = True
                continue
            computing.add(self._next_block_hash(seq))
            self._schedule(batch, seq, n)
            budget -= n
            i += 1
        deferred: list[Sequence] = []
        while (
            self.waiting and budget > 0 and len(self.running) < self.max_num_seqs and not preempted
        ):
            seq = self.waiting[0]
            self._match_prefix(seq)
            block_hash = self._next_block_hash(seq)
            if block_hash is not None and block_hash in computing:
                deferred.append(self.waiting.popleft())  # its block is cached after this pass
                continue
            n = min(seq.num_uncomputed_tokens, budget)
            reserve = self.watermark_blocks if self.running else 0
            if not self._make_room(seq, n, reserve=reserve, running_victims=False):
                break
            self.waiting.popleft()
            self.running.append(seq)
            seq.status = SequenceStatus.RUNNING
            if seq.num_cached_tokens < 0:  # first admission of this request
                seq.num_cached_tokens = seq.num_computed_tokens
                self.num_prompt_tokens += seq.num_prompt_tokens
                self.num_cached_tokens += seq.num_computed_tokens
            computing.add(block_hash)
            self._schedule(batch, seq, n)
            budget -= n
        self.waiting.extendleft(reversed(deferred))  # first come, first served next pass
        return batch

    def advance(self, seq: Sequence, num_tokens: int) -> None:
        """Record ``num_tokens`` more computed tokens of ``seq``; seal blocks that filled up."""
        start, end = seq.num_computed_tokens, seq.num_computed_tokens + num_tokens
        assert end <= len(seq.token_ids) and len(seq.block_table) * self.block_size >= end
        seq.num_computed_tokens = end
        if self.enable_prefix_caching:
            bs = self.block_size
            for i in range(start // bs, end // bs):
                self.pool.seal(seq.block_table[i], self._block_hash(seq, i), self._tokens(seq, i))

    # -- helpers ------------------------------------------------------------------------

    def _schedule(self, batch: ScheduledBatch, seq: Sequence, n: int) -> None:
        self._grow(seq, n, batch.copies)
        batch.seqs.append(seq)
        batch.num_tokens.append(n)
        seq.last_step = self.num_steps

    def _tokens(self, seq: Sequence, i: int) -> list[int]:
        return seq.token_ids[i * self.block_size : (i + 1) * self.block_size]

    def _block_hash(self, seq: Sequence, i: int) -> int:
        """Chained hash of ``seq``'s ``i``-th full block (computed and memoised in order)."""
        while len(seq.block_hashes) <= i:
            j = len(seq.block_hashes)
            parent = seq.block_hashes[j - 1] if j else None
            seq.block_hashes.append(self.pool.hash_block(parent, self._tokens(seq, j)))
        return seq.block_hashes[i]

    def _next_block_hash(self, seq: Sequence) -> int | None:
        """Hash of the block holding ``seq``'s next token to compute, if that block will be
        full of known tokens (``None`` too with prefix caching off)."""
        i = seq.num_computed_tokens // self.block_size
        if not self.enable_prefix_caching or (i + 1) * self.block_size > len(seq.token_ids):
            return None
        return self._block_hash(seq, i)

    def _match_prefix(self, seq: Sequence) -> None:
        """Extend the KV of a waiting ``seq`` with hashed blocks of its next full blocks,
        leaving at least one token to compute."""
        bs = self.block_size
        if not self.enable_prefix_caching or seq.num_computed_tokens % bs:
            return
        while seq.num_computed_tokens + bs < len(seq.token_ids):
            i = seq.num_computed_tokens // bs
            assert len(seq.block_table) == i
            block_id = self.pool.lookup(self._block_hash(seq, i), self._tokens(seq, i))
            if block_id is None:
                return
            self.pool.acquire(block_id)
            seq.block_table.append(block_id)
            seq.num_computed_tokens += bs

    def _blocks_needed(self, seq: Sequence, n: int) -> int:
        """New blocks for positions up to ``num_computed + n``, plus one to copy a shared
        partly filled last block."""
        need = -(-(seq.num_computed_tokens + n) // self.block_size) - len(seq.block_table)
        if seq.num_computed_tokens % self.block_size:
            need += self.pool.blocks[seq.block_table[-1]].ref_count > 1
        return need

    def _make_room(self, seq: Sequence, n: int, *, reserve: int, running_victims: bool) -> bool:
        """Preempt others until ``seq`` can get its blocks; False when nobody is left."""
        while self._blocks_needed(seq, n) + reserve > self.pool.num_free_blocks:
            victim = self._victim(seq, running_victims)
            if victim is None:
                return False
            self.preempt(victim)
        return True

    def _victim(self, seq: Sequence, running_victims: bool) -> Sequence | None:
        if self.idle:
            return next(iter(self.idle.values()))  # the longest idle pinned episode
        for other in reversed(self.waiting):
            if other is not seq and other.block_table:
                return other
        if running_victims and self.running and self.running[-1] is not seq:
            return self.running[-1]
        return None

    def _grow(self, seq: Sequence, n: int, copies: list[tuple[int, int]]) -> None:
        """Give ``seq`` blocks for ``n`` more tokens; copy-on-write its partly filled block."""
        if seq.num_computed_tokens % self.block_size:
            last = seq.block_table[-1]
            if self.pool.blocks[last].ref_count > 1:  # shared after a fork: copy
                new = self.pool.allocate()
                copies.append((last, new))
                self.pool.release(last)
                seq.block_table[-1] = new
            else:  # a full hashed block cut by a rewritten history: its content changes
                self.pool.unseal(last)
        target = -(-(seq.num_computed_tokens + n) // self.block_size)
        while len(seq.block_table) < target:
            seq.block_table.append(self.pool.allocate())

    def _drop(self, seq: Sequence) -> None:
        if seq.status is SequenceStatus.RUNNING:
            self.running.remove(seq)
        elif seq.status is SequenceStatus.WAITING:
            self.waiting.remove(seq)
        self.idle.pop(seq.seq_id, None)
        self._release(seq.block_table)
        seq.block_table.clear()
        seq.num_computed_tokens = 0

    def _release(self, block_ids: list[int]) -> None:
        for block_id in reversed(block_ids):  # tail blocks become the least recently used
            self.pool.release(block_id)
