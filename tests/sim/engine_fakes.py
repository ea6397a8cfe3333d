"""A toy model runner for engine state-machine tests: fast, deterministic, and strict.

It keeps a real paged "KV pool" (one ``(token, position)`` record per slot) and reads
every context back through the item's block table, so a wrong block table, a missing
copy-on-write, or a block reused while still referenced changes the next token or trips
an assertion. The next token is a fixed hash of the whole context, so a greedy
continuation has exactly one right answer: :func:`reference`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from agentworld.sim.engine import PagedEngine
from agentworld.sim.engine.runner import ForwardItem

VOCAB = 64
SEED = 1469598103934665603


def mix(fingerprint: int, token: int) -> int:
    """One step of a chained (FNV-1a style) fingerprint of a token context."""
    return ((fingerprint ^ (token + 1)) * 1099511628211) % (1 << 64)


def next_token(context: Sequence[int]) -> int:
    """The toy model: a deterministic function of the whole token context."""
    h = SEED
    for t in context:
        h = mix(h, t)
    return h % VOCAB


def reference(
    prompt: Sequence[int], max_new_tokens: int, stop_ids: Sequence[int] = ()
) -> list[int]:
    """Greedy continuation of ``prompt`` by the toy model, cut after a stop id."""
    context, out = list(prompt), []
    for _ in range(max_new_tokens):
        token = next_token(context)
        out.append(token)
        context.append(token)
        if token in stop_ids:
            break
    return out


class FakeRunner:
    """``ModelRunner`` stand-in over :func:`next_token` with a checked paged pool.

    Like a transformer's keys and values, the record written at position ``p`` depends on
    the whole context ``[0, p]``: it is ``(token, p, fingerprint of tokens[0..p])``, chained
    from the record at ``p - 1`` read through the block table. Every read walks the whole
    context and checks the chain, so KV computed under another prefix is caught.

    Attributes:
        batches: For every forward pass, ``(start_pos, num_new, need_logits)`` per item.
        on_forward: Called at the start of every forward pass (tests inject events there).
    """

    def __init__(self, num_blocks: int, block_size: int = 4):
        self.num_blocks, self.block_size = num_blocks, block_size
        self.kv: list[list[tuple[int, int, int] | None]] = [
            [None] * block_size for _ in range(num_blocks)
        ]
        self.batches: list[list[tuple[int, int, bool]]] = []
        self.on_forward: Callable[[Sequence[ForwardItem]], None] | None = None
        self.num_copies = 0
        self.fresh: set[int] = set()  # blocks handed out since the last forward pass

    def forward(self, items: Sequence[ForwardItem]) -> torch.Tensor:
        if self.on_forward is not None:
            self.on_forward(items)
        for block_id in self.fresh:  # a new block holds nothing until written or copied into
            self.kv[block_id] = [None] * self.block_size
        self.fresh.clear()
        bs = self.block_size
        self.batches.append([(i.start_pos, len(i.token_ids), i.need_logits) for i in items])
        written: set[tuple[int, int]] = set()
        for item in items:
            assert item.token_ids and len(item.block_table) * bs >= item.start_pos + len(
                item.token_ids
            )
            fingerprint = self._read(item.block_table, item.start_pos)
            for j, token in enumerate(item.token_ids):
                p = item.start_pos + j
                slot = (item.block_table[p // bs], p % bs)
                assert slot not in written, "two new tokens map to the same pool slot"
                written.add(slot)
                fingerprint = mix(fingerprint, token)
                self.kv[slot[0]][slot[1]] = (token, p, fingerprint)
        rows = []
        for item in items:
            if item.need_logits:
                logits = torch.full((VOCAB,), -10.0)
                end = item.start_pos + len(item.token_ids)
                logits[self._read(item.block_table, end) % VOCAB] = 10.0
                rows.append(logits)
        return torch.stack(rows) if rows else torch.empty(0, VOCAB)

    def _read(self, block_table: Sequence[int], end: int) -> int:
        """Fingerprint of positions ``[0, end)``, checking every record on the way."""
        bs, fingerprint = self.block_size, SEED
        for p in range(end):
            record = self.kv[block_table[p // bs]][p % bs]
            assert record is not None and record[1] == p, f"unwritten KV at position {p}"
            fingerprint = mix(fingerprint, record[0])
            assert record[2] == fingerprint, f"KV at position {p} was computed under another prefix"
        return fingerprint

    def copy_block(self, src: int, dst: int) -> None:
        assert src != dst
        self.kv[dst] = list(self.kv[src])
        self.fresh.discard(dst)
        self.num_copies += 1


def fake_engine(num_blocks: int = 64, block_size: int = 4, **options: object) -> PagedEngine:
    """A :class:`PagedEngine` over a :class:`FakeRunner` (``engine.runner``).

    Every block the pool hands out is wiped in the fake KV at the next forward pass (after
    that step's copies, which read their sources first, as the real runner does), so
    reading a position that was neither written nor copied into its block fails loudly.
    """
    options.setdefault("max_positions", 10_000)
    runner = FakeRunner(num_blocks, block_size)
    engine = PagedEngine(None, runner=runner, **options)  # type: ignore[arg-type]
    allocate = engine.pool.allocate

    def wiping_allocate() -> int:
        block_id = allocate()
        runner.fresh.add(block_id)
        return block_id

    engine.pool.allocate = wiping_allocate  # type: ignore[method-assign]
    return engine


def check_accounting(engine: PagedEngine) -> None:
    """Pool invariants; every block's ref count equals the block tables holding it; block
    tables cover exactly the computed tokens; memoised chain hashes match the tokens, and a
    held sealed block carries its holder's hash and tokens."""
    engine.pool.check()
    holders = [0] * engine.pool.num_blocks
    seqs = {id(s): s for s in engine.episodes.values()}
    seqs.update({id(s): s for s in engine._requests.values()})
    bs = engine.pool.block_size
    for seq in seqs.values():
        assert len(seq.block_table) == len(set(seq.block_table))
        assert len(seq.block_table) == -(-seq.num_computed_tokens // bs)
        parent = None  # memoised block hashes are those of the current tokens
        for i, block_hash in enumerate(seq.block_hashes):
            parent = engine.pool.hash_block(parent, seq.token_ids[i * bs : (i + 1) * bs])
            assert block_hash == parent, f"stale hash of block {i} of {seq.seq_id}"
        for i, block_id in enumerate(seq.block_table):
            holders[block_id] += 1
            block = engine.pool.blocks[block_id]
            if block.hash is not None and i < len(seq.block_hashes):  # sealed under our prefix
                assert block.hash == seq.block_hashes[i]
                assert block.token_ids == tuple(seq.token_ids[i * bs : (i + 1) * bs])
    assert [b.ref_count for b in engine.pool.blocks] == holders
