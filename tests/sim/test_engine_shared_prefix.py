"""Shared-prefix (cascade) attention: the merge is exact, and the runner uses it.

The runner tests build a real tiny Qwen3 or Llama (4 query / 2 key-value heads) and
compare its logits with an untouched eager copy's over the full sequence, as in
``test_engine_runner.py``.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from test_engine_runner import ATOL, BLOCK, Blocks, full_logits, tiny_model, tokens

from agentworld.sim.engine.runner import ForwardItem, ModelRunner
from agentworld.sim.engine.shared_prefix import (
    attend_partial,
    merge_partials,
    shared_prefix_blocks,
    split_by_first_block,
)


def test_merged_partials_equal_attention_over_all_keys() -> None:
    """Prefix keys (no mask) + per-item suffix keys (masked) merge to one softmax."""
    gen = torch.Generator().manual_seed(0)
    n, heads, rows, prefix, rest, dim = 3, 2, 4, 24, 40, 16
    q = torch.randn(n, heads, rows, dim, generator=gen)
    k = torch.randn(n, heads, prefix + rest, dim, generator=gen) * 2
    v = torch.randn(n, heads, prefix + rest, dim, generator=gen)
    k[:, :, :prefix], v[:, :, :prefix] = k[:1, :, :prefix], v[:1, :, :prefix]  # shared
    visible = torch.arange(prefix + rest)[None, :] < torch.tensor([30, 50, 64])[:, None]
    mask = torch.zeros(n, 1, rows, prefix + rest).masked_fill_(~visible[:, None, None], -torch.inf)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    shared_q = q.transpose(0, 1).reshape(1, heads, n * rows, dim)
    out_p, lse_p = attend_partial(shared_q, k[:1, :, :prefix], v[:1, :, :prefix], None, None)
    out_p = out_p.view(heads, n, rows, dim).transpose(0, 1)
    lse_p = lse_p.view(heads, n, rows).transpose(0, 1)
    suffix_mask = mask[..., prefix:].contiguous()
    out_s, lse_s = attend_partial(
        q, k[:, :, prefix:].contiguous(), v[:, :, prefix:].contiguous(), suffix_mask, None
    )
    torch.testing.assert_close(
        lse_s, torch.logsumexp(q @ k[:, :, prefix:].mT * dim**-0.5 + suffix_mask, -1)
    )
    torch.testing.assert_close(merge_partials(out_p, lse_p, out_s, lse_s), expected)


def test_shared_prefix_blocks_and_group_split() -> None:
    table = torch.tensor([[5, 6, 7, 9], [5, 6, 8, 2], [5, 6, 7, 3]])
    assert shared_prefix_blocks(table, 4) == 2
    assert shared_prefix_blocks(table, 1) == 1  # capped: a query sits in the second block
    assert shared_prefix_blocks(table[:, :0], 4) == 0
    assert shared_prefix_blocks(torch.tensor([[1, 6], [5, 6]]), 2) == 0
    first = [5, 4, 5, None, 5]
    assert split_by_first_block([0, 1, 2, 3, 4], first) == [[0, 2, 4], [1, 3]]
    assert split_by_first_block([0, 2, 4], first) == [[0, 2, 4]]  # all share already
    assert split_by_first_block([1, 3], first) == [[1, 3]]  # nothing shared by two


@pytest.mark.parametrize("arch", ["qwen3", "llama"])
def test_runner_reads_shared_prefix_once_and_stays_exact(arch: str) -> None:
    """Four sequences share a 24-token prefix's blocks, a fifth holds the same tokens in its
    own blocks (a concurrent prefill): prefill and decode logits equal the model's, decode
    gathers no prefix block of the four, and turning the mechanism off changes nothing."""
    model = tiny_model(arch)
    reference = copy.deepcopy(model)
    reference.set_attn_implementation("eager")
    runners = [
        ModelRunner(model, num_blocks=96, block_size=BLOCK),
        ModelRunner(copy.deepcopy(model), num_blocks=96, block_size=BLOCK, share_prefix=False),
    ]
    assert runners[0].share_prefix, "on by default on a CPU"
    prefix = tokens(24, seed=70)
    seqs = [prefix + tokens(14, seed=71 + i) for i in range(5)]
    expected = [full_logits(reference, s) for s in seqs]
    blocks = Blocks(96, seed=7)
    shared, own = blocks.take(24), blocks.take(24)
    tables = [shared + blocks.take(14) for _ in range(4)] + [own + blocks.take(14)]
    for runner in runners:
        runner.forward([ForwardItem(prefix, 0, shared, False), ForwardItem(prefix, 0, own, False)])
        items = [ForwardItem(s[24:30], 24, t, True) for s, t in zip(seqs, tables)]
        for i, row in enumerate(runner.forward(items)):
            torch.testing.assert_close(row, expected[i][29], atol=ATOL, rtol=0)
        for pos in range(30, 38):  # decode: positions 30..37 cross into the tenth block
            items = [ForwardItem([s[pos]], pos, t, True) for s, t in zip(seqs, tables)]
            for i, row in enumerate(runner.forward(items)):
                torch.testing.assert_close(row, expected[i][pos], atol=ATOL, rtol=0)
            if runner.share_prefix:
                assert runner.shared_blocks == 6  # the four read the 6 prefix blocks once
            else:
                assert runner.shared_blocks == 0
    with pytest.raises(ValueError, match="CPU"):
        ModelRunner(tiny_model(arch).to("meta"), num_blocks=8, block_size=BLOCK, share_prefix=True)
