"""Training-speed options of every stage: layer freezing, gradient checkpointing, sequence packing.

* :func:`freeze_lower_layers` (``freeze_layers = N``): the input embeddings and the lowest ``N``
  decoder layers get no gradient and no optimizer state, so backward stops at the first trained
  layer. With tied embeddings (SmolLM2, the presets) the output head is the embedding matrix
  and is frozen with it.
* :func:`enable_checkpointing` (``gradient_checkpointing = true``): activations are recomputed
  in backward instead of stored (``PreTrainedModel.gradient_checkpointing_enable``,
  non-reentrant): less memory, more compute.
* :func:`pack` (``packing = true``): samples are concatenated into rows of at most
  ``max_seq_len`` tokens (first-fit by decreasing length) and :func:`collate_packed` gives each
  row position ids that restart at every sample and a block-diagonal causal mask, so no token
  attends across samples and each sample's loss is what it would be alone (the first token of
  each sample is not predicted); there is no padding inside a row.

``bench/pretrained_cpu_speed.py`` measures what each costs or saves in tokens/s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from agentworld.trainers.training.data import IGNORE_INDEX, PAD_MULTIPLE, Sample


@dataclass(slots=True)
class Packed(Sample):
    """Several samples in one sequence; ``lengths`` ``[k]`` are their token counts, in order."""

    lengths: list[int]


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The decoder layers of a causal LM (``model.model.layers`` in Llama, Qwen, Gemma, ...).

    Raises:
        ValueError: no ``layers`` list under the model's decoder.
    """
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    layers = getattr(decoder, "layers", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise ValueError(
            f"freeze_layers: cannot find the decoder layers of {type(model).__name__} "
            "(expected model.get_decoder().layers)"
        )
    return layers


def freeze_lower_layers(model: torch.nn.Module, n: int) -> int:
    """Freeze the input embeddings and the lowest ``n`` decoder layers of ``model``.

    Returns:
        The number of parameters frozen.

    Raises:
        ValueError: ``n`` is not below the model's number of decoder layers (nothing would train).
    """
    layers = decoder_layers(model)
    if n >= len(layers):
        raise ValueError(
            f"freeze_layers={n} would freeze all {len(layers)} decoder layers; use at most "
            f"{len(layers) - 1}"
        )
    modules = [model.get_input_embeddings(), *layers[:n]]
    frozen = 0
    for module in modules:
        for p in module.parameters():
            if p.requires_grad:
                p.requires_grad_(False)
                frozen += p.numel()
    return frozen


def enable_checkpointing(model: torch.nn.Module) -> None:
    """Gradient checkpointing on every decoder layer (non-reentrant), KV cache off.

    With frozen embeddings (LoRA, ``freeze_layers``) the inputs are made to require grad so that
    the recomputed layers still back-propagate (``enable_input_require_grads``).
    """
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):  # its transformers 5 name
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    model.config.use_cache = False
    if not model.get_input_embeddings().weight.requires_grad:
        model.enable_input_require_grads()


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
    ``width`` is rounded up to a multiple of ``PAD_MULTIPLE`` as in :func:`~.data.collate`."""
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
