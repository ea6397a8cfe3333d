"""The paged model runner against Hugging Face's own forward pass and ``generate`` (fp32, CPU).

Every test builds a real tiny Qwen3 or Llama (GQA: 4 query heads, 2 key/value
heads) from its config and compares the runner's logits with the logits of an
untouched copy of the model (eager attention, no cache) over the full sequence.
Block tables are drawn at random from the pool, so logical and physical block
order never coincide.
"""

from __future__ import annotations

import copy
import random

import pytest
import torch
from tiny_lm import tiny_lm

from agentworld.sim.engine.gather_cache import PATIENCE
from agentworld.sim.engine.masks import group_masks
from agentworld.sim.engine.runner import ForwardItem, ModelRunner, plan_groups

VOCAB = 128
BLOCK = 4  # small blocks: many block boundaries in short sequences
# fp32 logits of magnitude ~3: the runner's partial attentions (shared prefix, past, new tokens)
# merged through their log-sum-exp add in another order than eager attention does (a real
# error shows as 1e-2 or more).
ATOL = 2e-5


def tiny_model(arch: str, seed: int = 0) -> torch.nn.Module:
    """A random fp32 ``arch`` model: 2 layers, hidden 64, 4 query / 2 key-value heads of 16."""
    return tiny_lm(arch, VOCAB, 256, seed)


@pytest.fixture(params=["qwen3", "llama"])
def models(request: pytest.FixtureRequest) -> tuple[torch.nn.Module, ModelRunner]:
    """``(reference, runner)``: an eager copy made before the runner takes the model."""
    model = tiny_model(request.param)
    reference = copy.deepcopy(model)
    reference.set_attn_implementation("eager")
    return reference, ModelRunner(model, num_blocks=96, block_size=BLOCK)


class Blocks:
    """Hands out distinct pool blocks in a shuffled order."""

    def __init__(self, num_blocks: int, seed: int = 0):
        self.free = list(range(num_blocks))
        random.Random(seed).shuffle(self.free)

    def take(self, num_tokens: int) -> list[int]:
        return [self.free.pop() for _ in range(-(-num_tokens // BLOCK))]


def tokens(n: int, seed: int) -> list[int]:
    return torch.randint(0, VOCAB, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


@torch.inference_mode()
def full_logits(reference: torch.nn.Module, ids: list[int]) -> torch.Tensor:
    """Logits ``[len(ids), vocab]`` of the whole sequence, no cache."""
    return reference(input_ids=torch.tensor([ids])).logits[0]


def test_prefill_whole_and_in_chunks(models) -> None:
    reference, runner = models
    ids = tokens(37, seed=1)
    expected = full_logits(reference, ids)
    blocks = Blocks(runner.num_blocks)
    whole = runner.forward([ForwardItem(ids, 0, blocks.take(37), True)])
    assert whole.shape == (1, VOCAB) and whole.dtype == torch.float32
    torch.testing.assert_close(whole[0], expected[-1], atol=ATOL, rtol=0)

    table, start = blocks.take(37), 0
    for size in (5, 1, 11, 3, 17):  # chunk ends inside and at block boundaries
        [logits] = runner.forward([ForwardItem(ids[start : start + size], start, table, True)])
        start += size
        torch.testing.assert_close(logits, expected[start - 1], atol=ATOL, rtol=0)


def test_packed_sequences_of_different_lengths(models) -> None:
    reference, runner = models
    lengths = [1, 3, 16, 17, 29, 40]
    seqs = [tokens(n, seed=10 + n) for n in lengths]
    blocks = Blocks(runner.num_blocks, seed=1)
    need = [True, False, True, True, False, True]
    items = [ForwardItem(s, 0, blocks.take(len(s)), w) for s, w in zip(seqs, need)]
    logits = runner.forward(items)
    expected = [full_logits(reference, s)[-1] for s, w in zip(seqs, need) if w]
    assert logits.shape == (len(expected), VOCAB)
    torch.testing.assert_close(logits, torch.stack(expected), atol=ATOL, rtol=0)


def test_decode_steps_mixed_with_prefill_chunks(models) -> None:
    """Decode tokens of running sequences share forward passes with another one's prefill."""
    reference, runner = models
    seqs = [tokens(n, seed=20 + n) for n in (30, 22, 20)]
    expected = [full_logits(reference, s) for s in seqs]
    blocks = Blocks(runner.num_blocks, seed=2)
    tables = [blocks.take(len(s)) for s in seqs]
    prompt = [24, 16, 1]
    runner.forward([ForwardItem(s[:p], 0, t, False) for s, t, p in zip(seqs, tables, prompt)])
    pos = prompt[:]
    for _ in range(6):  # seqs 0 and 1 decode one token a step; seq 2 prefills 1-2 tokens a step
        items = [ForwardItem([seqs[i][pos[i]]], pos[i], tables[i], True) for i in range(2)]
        size = 2 if pos[2] % 2 else 1
        items.append(ForwardItem(seqs[2][pos[2] : pos[2] + size], pos[2], tables[2], True))
        logits = runner.forward(items)
        for i, row in enumerate(logits):
            step = 1 if i < 2 else size
            torch.testing.assert_close(row, expected[i][pos[i] + step - 1], atol=ATOL, rtol=0)
            pos[i] += step


def test_items_sharing_prefix_blocks(models) -> None:
    """Two sequences read the same physical blocks for their common 16-token prefix."""
    reference, runner = models
    prefix = tokens(16, seed=3)
    a, b = prefix + tokens(7, seed=4), prefix + tokens(12, seed=5)
    blocks = Blocks(runner.num_blocks, seed=3)
    shared = blocks.take(16)
    runner.forward([ForwardItem(prefix, 0, shared, False)])
    table_a, table_b = shared + blocks.take(7), shared + blocks.take(12)
    logits = runner.forward(
        [ForwardItem(a[16:], 16, table_a, True), ForwardItem(b[16:], 16, table_b, True)]
    )
    torch.testing.assert_close(logits[0], full_logits(reference, a)[-1], atol=ATOL, rtol=0)
    torch.testing.assert_close(logits[1], full_logits(reference, b)[-1], atol=ATOL, rtol=0)


def test_fork_with_copy_block(models) -> None:
    """A child shares its parent's full blocks and copies the partly filled last one."""
    reference, runner = models
    history = tokens(18, seed=6)  # 4 full blocks + 2 tokens in the fifth
    blocks = Blocks(runner.num_blocks, seed=4)
    parent = blocks.take(18)
    runner.forward([ForwardItem(history, 0, parent, False)])
    child = parent[:4] + blocks.take(2 * BLOCK)  # positions 16..23
    runner.copy_block(parent[4], child[4])
    parent_next, child_next = tokens(5, seed=7), tokens(3, seed=8)
    parent += blocks.take(23 - 20)  # parent grows to 23 tokens (6 blocks)
    logits = runner.forward(
        [ForwardItem(parent_next, 18, parent, True), ForwardItem(child_next, 18, child, True)]
    )
    expected = [full_logits(reference, history + parent_next)[-1]]
    expected.append(full_logits(reference, history + child_next)[-1])
    torch.testing.assert_close(logits, torch.stack(expected), atol=ATOL, rtol=0)


def test_greedy_generation_equals_model_generate(models) -> None:
    """Greedy decoding driven through the runner, all prompts packed, equals ``model.generate``."""
    reference, runner = models
    prompts = [tokens(n, seed=30 + n) for n in (5, 13, 26, 2)]
    new = 12
    blocks = Blocks(runner.num_blocks, seed=5)
    tables = [blocks.take(len(p) + new) for p in prompts]
    outputs: list[list[int]] = [[] for _ in prompts]
    logits = runner.forward([ForwardItem(p, 0, t, True) for p, t in zip(prompts, tables)])
    for step in range(new):
        next_ids = logits.argmax(-1).tolist()
        for out, token in zip(outputs, next_ids):
            out.append(token)
        if step < new - 1:
            items = [
                ForwardItem([o[-1]], len(p) + step, t, True)
                for p, o, t in zip(prompts, outputs, tables)
            ]
            logits = runner.forward(items)
    for prompt, out in zip(prompts, outputs):
        for model in (reference, runner.model):  # the runner's model still runs model.generate
            expected = model.generate(
                torch.tensor([prompt]),
                attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                do_sample=False,
                max_new_tokens=new,
                min_new_tokens=new,
                pad_token_id=0,
            )[0, len(prompt) :].tolist()
            assert out == expected


def test_kv_pool_shape_and_bytes() -> None:
    model = tiny_model("qwen3")
    runner = ModelRunner(model, num_blocks=10, block_size=8)
    assert len(runner.key_cache) == len(runner.value_cache) == 2
    assert runner.key_cache[0].shape == (10, 8, 2, 16)
    per_block = ModelRunner.kv_bytes_per_block(model.config, 8, torch.float32)
    assert per_block == 2 * 2 * 8 * 2 * 16 * 4
    pool = sum(t.nbytes for t in runner.key_cache + runner.value_cache)
    assert pool == 10 * per_block
    assert ModelRunner.kv_bytes_per_block(model.config, 8, torch.bfloat16) == per_block // 2


def test_invalid_items_fail_loudly() -> None:
    runner = ModelRunner(tiny_model("llama"), num_blocks=8, block_size=BLOCK)
    with pytest.raises(AssertionError, match="cover"):
        runner.forward([ForwardItem([1, 2, 3, 4, 5], 0, [0], True)])
    with pytest.raises(AssertionError, match="same pool slot"):
        runner.forward([ForwardItem([1], 2, [3], True), ForwardItem([2], 2, [3], True)])
    with pytest.raises(AssertionError, match="outside the pool"):
        runner.forward([ForwardItem([1], 0, [8], True)])
    with pytest.raises(ValueError, match="num_blocks"):
        ModelRunner(tiny_model("llama"), num_blocks=0)


def test_plan_groups_batches_decodes_and_isolates_long_prefills() -> None:
    q_lens = [1] * 40 + [300, 17, 17, 1]
    ctx_lens = [400 + i for i in range(40)] + [300, 517, 530, 410]
    groups = plan_groups(q_lens, ctx_lens)
    assert sorted(i for g in groups for i in g) == list(range(44))
    decodes = [g for g in groups if 0 in g][0]
    assert set(decodes) == set(range(40)) | {43}
    assert [40] in groups  # the 300-token prefill attends alone
    assert any(set(g) == {41, 42} for g in groups)


def test_decode_reuses_gathered_blocks_and_stays_exact(models) -> None:
    """CPU decode groups keep their gathered keys/values: a steady decode step copies one block
    per sequence (its last), yet logits stay exact through a block rewrite (copy-on-write into
    a reused block), a sequence leaving the group and a reordered group."""
    reference, runner = models
    assert runner._gather_cache is not None, "reuse is on by default on a CPU"
    seqs = [tokens(40, seed=60 + i) for i in range(3)]
    expected = [full_logits(reference, s) for s in seqs]
    blocks = Blocks(runner.num_blocks, seed=6)
    tables = [blocks.take(40) for _ in seqs]  # 10 blocks each
    runner.forward([ForwardItem(s[:9], 0, t, False) for s, t in zip(seqs, tables)])
    pos, copied = [9, 9, 9], [runner.gathered_blocks]

    def decode(order: list[int]) -> None:
        items = [ForwardItem([seqs[i][pos[i]]], pos[i], tables[i], True) for i in order]
        for i, row in zip(order, runner.forward(items)):
            torch.testing.assert_close(row, expected[i][pos[i]], atol=ATOL, rtol=0)
            pos[i] += 1
        copied.append(runner.gathered_blocks)

    for _ in range(4):  # positions 9..12: the third block of each sequence
        decode([0, 1, 2])
    # The prefill pass (the largest group, so the cached one) copies all 3 blocks of the 3
    # sequences; each decode pass then copies only each sequence's last block.
    assert copied == [9, 3, 3, 3, 3]
    # Move sequence 1's third block: same content in another block (copy-on-write).
    moved = blocks.take(1)[0]
    runner.copy_block(tables[1][2], moved)
    tables[1][2] = moved
    decode([0, 1, 2])  # position 13: the three last blocks plus the moved one
    assert copied[-1] == 4
    for _ in range(3):  # positions 14..16: crossing into the fifth block adds a column
        decode([0, 1, 2])
    assert copied[-3:] == [3, 3, 3]
    decode([0, 2])  # sequence 1 pauses: another group size is gathered plainly...
    assert copied[-1] == 2 * 5
    decode([2, 0, 1])  # ...and the cache serves the 3 again (reordered: every block moves)
    assert copied[-1] == 3 * 5
    for _ in range(PATIENCE):  # a group size that persists gets the cache on its PATIENCE-th pass
        decode([0, 2])
    # All of them copy every block (plain gathers, the last one filling the cache)...
    assert copied[-PATIENCE:] == [2 * -(-(20 + k) // BLOCK) for k in range(PATIENCE)]
    decode([0, 2])  # ...then only the two last blocks
    assert copied[-1] == 2 and pos == [20 + PATIENCE, 18, 20 + PATIENCE]
    off = ModelRunner(tiny_model("qwen3"), num_blocks=8, block_size=BLOCK, reuse_gathers=False)
    assert off._gather_cache is None


def test_prefill_chunks_of_several_sequences_after_their_past(models) -> None:
    """Second prefill chunks of different lengths at different starts, in one group: their new
    tokens are attended apart from their past (two partial attentions merged) and every new
    token's logits equal the model's."""
    reference, runner = models
    seqs = [tokens(n, seed=40 + n) for n in (31, 26, 21)]
    expected = [full_logits(reference, s) for s in seqs]
    blocks = Blocks(runner.num_blocks, seed=4)
    tables = [blocks.take(len(s)) for s in seqs]
    past, chunk = [13, 9, 4], [7, 2, 15]
    runner.forward([ForwardItem(s[:p], 0, t, False) for s, t, p in zip(seqs, tables, past)])
    items = [ForwardItem(s[p : p + c], p, t, True) for s, t, p, c in zip(seqs, tables, past, chunk)]
    for i, row in enumerate(runner.forward(items)):
        torch.testing.assert_close(row, expected[i][past[i] + chunk[i] - 1], atol=ATOL, rtol=0)
    decode = [ForwardItem([s[p + c]], p + c, t, True)
              for s, t, p, c in zip(seqs, tables, past, chunk)]  # fmt: skip
    for i, row in enumerate(runner.forward(decode)):
        torch.testing.assert_close(row, expected[i][past[i] + chunk[i]], atol=ATOL, rtol=0)


def test_split_masks_allow_exactly_the_dense_masks_keys() -> None:
    """For every query row, the past mask plus the new-token mask allow the key positions the
    dense causal mask allows, each once."""
    start, q_lens, rep, first, keys = torch.tensor([8, 5, 12]), torch.tensor([3, 6, 1]), 2, 4, 16
    dense = group_masks(start, q_lens, first, keys, rep, torch.float32, split=False)
    split = group_masks(start, q_lens, first, keys, rep, torch.float32, split=True)
    assert dense.new_keys is None and split.new_keys is not None
    assert split.mask.shape == (3, 1, 1, keys) and split.new_mask.shape == (3, 1, rep * 6, 6)
    for i in range(3):
        for row in range(rep * 6):
            want = {first + k for k in range(keys) if dense.mask[i, 0, row, k] == 0}
            got = [first + k for k in range(keys) if split.mask[i, 0, 0, k] == 0]
            got += [first + int(split.new_keys[i, k]) for k in range(6)
                    if split.new_mask[i, 0, row, k] == 0]  # fmt: skip
            assert sorted(got) == sorted(want) and len(got) == len(set(got))
    assert group_masks(start, q_lens, 8, keys, rep, torch.float32, split=True).new_keys is None
    decode = group_masks(start, torch.ones(3, dtype=torch.long), 0, keys, rep, torch.float32, True)
    assert decode.mask.shape == (3, 1, 1, keys) and decode.new_keys is None
