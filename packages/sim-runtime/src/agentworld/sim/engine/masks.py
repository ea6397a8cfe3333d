"""Additive attention masks of one attention group, built on the host every forward pass.

A group's queries are GQA-folded (rows ``r * max_q + j`` of each key/value head, see
:class:`agentworld.sim.engine.attention.AttentionGroup`). A dense mask over the whole context,
``[n, 1, rep * max_q, keys]``, costs ``O(rep * max_q * keys)`` to build, and in a long episode
a prefill group's was most of the runner's host time (issue 35, item 3). So:

* a decode group (``max_q == 1``) gets one row per item, ``[n, 1, 1, keys]``, broadcast over
  the ``rep`` query heads of each key/value head;
* a prefill group whose items all have context before their new tokens is attended in two
  parts on a CPU: the *past* keys through a padding mask ``[n, 1, 1, keys]`` (position <
  ``start``), and the *new* keys (gathered, ``[n, max_q]`` per item) through a causal mask
  ``[n, 1, rep * max_q, max_q]``; the two partial results are merged exactly through their
  log-sum-exp (:func:`agentworld.sim.engine.shared_prefix.merge_partials`, as FlashInfer's
  cascade attention does);
* otherwise (a first prefill with no past, or another device) the dense mask.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(slots=True)
class GroupMasks:
    """Masks of one group (see the module docstring).

    Attributes:
        mask: Additive mask over the gathered keys: dense ``[n, 1, rep * max_q, keys]``, or
            one row ``[n, 1, 1, keys]``; ``None`` when every query attends exactly the
            first ``num_keys`` keys (decode steps over contexts of equal length).
        new_keys: ``[n, max_q]`` index, among the gathered keys, of each item's new tokens
            (padding repeats the last), when the new keys are attended apart; else ``None``.
        new_mask: ``[n, 1, rep * max_q, max_q]`` causal mask over ``new_keys``; else ``None``.
    """

    mask: torch.Tensor | None
    new_keys: torch.Tensor | None = None
    new_mask: torch.Tensor | None = None


def group_masks(
    start: torch.Tensor,
    q_lens: torch.Tensor,
    first_key: int,
    num_keys: int,
    rep: int,
    dtype: torch.dtype,
    split: bool,
) -> GroupMasks:
    """The masks of a group of ``n`` items.

    Args:
        start: ``[n]`` tokens of each item already cached (position of its first new token).
        q_lens: ``[n]`` new tokens of each item (>= 1).
        first_key: Position of the first gathered key (after a shared prefix), tokens.
        num_keys: Gathered keys per item (``max_blocks * block_size - first_key``).
        rep: Query heads per key/value head.
        dtype: The model's dtype (masks are additive: 0 or ``-inf``).
        split: Whether the new keys may be attended apart (a CPU device).
    """
    max_q = int(q_lens.max())
    ends = start + q_lens
    if max_q == 1 and bool((ends == ends[0]).all()):
        return GroupMasks(None)
    zero, blocked = (torch.full((), x, dtype=dtype) for x in (0.0, float("-inf")))
    key_pos = torch.arange(first_key, first_key + num_keys)
    if max_q == 1:
        allowed = key_pos[None, :] < ends[:, None]
        return GroupMasks(torch.where(allowed[:, None, None], zero, blocked))
    j = torch.arange(max_q)
    last = torch.minimum(j[None, :], q_lens[:, None] - 1)  # padding rows repeat the last query
    if split and bool((start > first_key).all()):
        past = key_pos[None, :] < start[:, None]  # [n, keys]
        causal = j[None, None, :] <= last[:, :, None]  # [n, max_q (query), max_q (key)]
        causal = causal.repeat(1, rep, 1)  # rows r * max_q + j
        return GroupMasks(
            torch.where(past[:, None, None], zero, blocked),
            new_keys=start[:, None] - first_key + last,
            new_mask=torch.where(causal[:, None], zero, blocked),
        )
    allowed = key_pos[None, None, :] <= (start[:, None] + last)[:, :, None]  # [n, max_q, keys]
    allowed = allowed.repeat(1, rep, 1)  # rows r * max_q + j
    return GroupMasks(torch.where(allowed[:, None], zero, blocked))
