"""Training sequences and their micro-batches: a :class:`Sample` (token ids and loss mask),
:func:`collate` (right-padded rows), and sequence packing (``packing = true``: :func:`pack` puts
several samples in one row and :func:`collate_packed` keeps them apart with position ids and a
block-diagonal causal mask). Shared by the data builders (:mod:`.data`) and the training-speed
options (:mod:`.speed`), which re-export these names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

IGNORE_INDEX = -100


@dataclass(slots=True)
class Sample:
    """One training sequence: ``input_ids`` ``[seq_len]`` and ``loss_mask`` ``[seq_len]`` (1 = predict)."""

    input_ids: list[int]
    loss_mask: list[int]

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass(slots=True)
class Packed(Sample):
    """Several samples in one sequence; ``lengths`` ``[k]`` are their token counts, in order."""

    lengths: list[int]


PAD_MULTIPLE = 64  # tokens; batch widths are rounded up to it


def collate(batch: Sequence[Sample], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a micro-batch: ``input_ids`` and ``labels`` ``[batch, width]`` (labels -100 off-target).
    Packed rows (:class:`Packed`) go to :func:`collate_packed`.

    ``width`` is the longest sample rounded up to a multiple of ``PAD_MULTIPLE`` tokens, so
    that a run sees a few dozen distinct shapes instead of hundreds (oneDNN builds and caches
    kernels per shape). No attention mask is returned: with right padding a causal model never
    attends from a real token to a pad, so SDPA can take its fast causal path.
    """
    if isinstance(batch[0], Packed):
        return collate_packed(batch, pad_id)  # type: ignore[arg-type]
    width = -(-max(len(s) for s in batch) // PAD_MULTIPLE) * PAD_MULTIPLE
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), IGNORE_INDEX, dtype=torch.long)
    for row, s in enumerate(batch):
        ids[row, : len(s)] = torch.tensor(s.input_ids)
        labels[row, : len(s)] = torch.where(
            torch.tensor(s.loss_mask, dtype=torch.bool), torch.tensor(s.input_ids), IGNORE_INDEX
        )
    return {"input_ids": ids, "labels": labels}


def pack(samples: Sequence[Sample], max_seq_len: int) -> list[Packed]:
    """Samples packed into rows of at most ``max_seq_len`` tokens, first-fit by decreasing length.

    Every token of ``samples`` appears exactly once; a sample longer than ``max_seq_len`` (none
    is, after windowing) gets a row of its own. The result is in a fixed order (same input,
    same rows).
    """
    rows: list[list[Sample]] = []
    room: list[int] = []
    for s in sorted(samples, key=len, reverse=True):
        for i, free in enumerate(room):
            if len(s) <= free:
                rows[i].append(s)
                room[i] -= len(s)
                break
        else:
            rows.append([s])
            room.append(max_seq_len - len(s))
    return [
        Packed(
            [t for s in row for t in s.input_ids],
            [m for s in row for m in s.loss_mask],
            [len(s) for s in row],
        )
        for row in rows
    ]


def collate_packed(batch: Sequence[Packed], pad_id: int) -> dict[str, torch.Tensor]:
    """A micro-batch of packed rows: ``input_ids``, ``labels``, ``position_ids`` ``[batch, width]``
    and a boolean ``attention_mask`` ``[batch, 1, width, width]`` (True: may attend) that is
    causal inside each sample and blocks every other sample; padding attends only to itself.
    ``width`` is rounded up to a multiple of ``PAD_MULTIPLE`` as in :func:`collate`."""
    width = -(-max(len(s) for s in batch) // PAD_MULTIPLE) * PAD_MULTIPLE
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), IGNORE_INDEX, dtype=torch.long)
    positions = torch.zeros((len(batch), width), dtype=torch.long)
    segment = torch.full((len(batch), width), -1, dtype=torch.long)
    for row, s in enumerate(batch):
        n = len(s)
        ids[row, :n] = torch.tensor(s.input_ids)
        keep = torch.tensor(s.loss_mask, dtype=torch.bool)
        labels[row, :n] = torch.where(keep, torch.tensor(s.input_ids), IGNORE_INDEX)
        positions[row, :n] = torch.cat([torch.arange(k) for k in s.lengths])
        starts = torch.tensor([0, *s.lengths[:-1]]).cumsum(0)
        labels[row, starts] = IGNORE_INDEX  # no sample predicts its first token from the last
        segment[row, :n] = torch.cat([torch.full((k,), i) for i, k in enumerate(s.lengths)])
    causal = torch.ones(width, width, dtype=torch.bool).tril()
    same = segment[:, :, None] == segment[:, None, :]
    mask = same & causal & (segment[:, :, None] >= 0)
    mask |= torch.eye(width, dtype=torch.bool)  # padding rows attend to themselves (no NaN)
    return {"input_ids": ids, "labels": labels, "position_ids": positions,
            "attention_mask": mask[:, None]}
