"""Training-speed options of every stage: layer freezing, gradient checkpointing, sequence packing.

* :func:`freeze_lower_layers` (``freeze_layers = N``): the input embeddings and the lowest ``N``
  decoder layers get no gradient and no optimizer state, so backward stops at the first trained
  layer. With tied embeddings (SmolLM2, the presets) the output head is the embedding matrix
  and is frozen with it.
* :func:`enable_checkpointing` (``gradient_checkpointing = true``): activations are recomputed
  in backward instead of stored (``PreTrainedModel.gradient_checkpointing_enable``,
  non-reentrant): less memory, more compute.
* :func:`~.batches.pack` (``packing = true``): samples are concatenated into rows of at most
  ``max_seq_len`` tokens (first-fit by decreasing length) and
  :func:`~.batches.collate_packed` gives each row position ids that restart at every sample and
  a block-diagonal causal mask, so no token attends across samples and each sample's loss is
  what it would be alone (the first token of each sample is not predicted); there is no
  padding inside a row.

``bench/pretrained_cpu_speed.py`` measures what each costs or saves in tokens/s.
"""

from __future__ import annotations

import torch

from agentworld.trainers.training.batches import Packed, collate_packed, pack

__all__ = [
    "Packed", "collate_packed", "decoder_layers", "enable_checkpointing", "freeze_lower_layers",
    "pack",
]


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
