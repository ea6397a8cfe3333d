"""The GPU recipe's from-scratch model: a Qwen3-architecture LM sized for one H100, built with a
tokenizer trained on the run's training episodes and saved as the checkpoint ``[cpt]`` starts from.

The trainers' presets (``agentworld.trainers.models.specs.PRESETS``) are sized for two CPU cores
(~4M parameters); this one is ~35M. It is built here, not added there, so that the recipe runs
through the pipeline unchanged: ``model = "<run dir>/init"`` is an ordinary checkpoint directory.
Like the quickstart's ``copy`` preset it starts with the copy prior (an induction circuit,
:mod:`agentworld.trainers.models.copy_prior`) and RoPE theta 1e6.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SHAPES: dict[str, dict[str, int]] = {
    # ~35M parameters with an 8,192-token vocabulary (4.2M of them the tied embedding).
    "gpu": {"hidden_size": 512, "num_hidden_layers": 8, "num_attention_heads": 8,
            "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 2048,
            "max_position_embeddings": 2048},
    # The CPU dry run's (tests): about the smallest the copy prior's selection head accepts.
    "tiny": {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 6,
             "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 256,
             "max_position_embeddings": 2048},
}


def build_init(episodes: list[Any], shape: str, vocab_size: int, out_dir: str | Path,
               seed: int = 0) -> dict[str, int]:
    """Train a byte-level BPE of ``vocab_size`` tokens on ``episodes`` (as the ``cpt`` trainer's
    ``tokenizer = "train"`` does), build a randomly initialised fp32 Qwen3 model of ``shape`` with
    the copy prior, and save both to ``out_dir``.

    Returns:
        ``{"parameters": N, "vocab_size": V}``.

    Raises:
        ValueError: unknown ``shape`` (the message lists the shapes), no episodes.
    """
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; valid shapes: {', '.join(SHAPES)}")
    if not episodes:
        raise ValueError("no training episodes to train the tokenizer on")
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from agentworld.core.formats import OBS_OPEN
    from agentworld.trainers.models.copy_prior import apply_copy_prior
    from agentworld.trainers.models.specs import num_parameters
    from agentworld.trainers.models.tokenizer import train_tokenizer
    from agentworld.trainers.training.base import corpus_texts

    tokenizer = train_tokenizer(corpus_texts(episodes), vocab_size)
    vocab = tokenizer.get_vocab()
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer), **SHAPES[shape], tie_word_embeddings=True, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1e6}, attention_dropout=0.0,
        use_cache=True, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None)
    config._attn_implementation = "sdpa"
    model = Qwen3ForCausalLM(config).to(torch.float32)
    apply_copy_prior(model, seed=seed, select_after=vocab[OBS_OPEN], sink=vocab["<|im_start|>"])
    # Chat turns end with <|im_end|>: generation stops there too (as the trainers' presets do).
    model.generation_config.eos_token_id = [vocab["<|im_end|>"], config.eos_token_id]
    model.generation_config.pad_token_id = config.pad_token_id
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return {"parameters": num_parameters(model), "vocab_size": len(tokenizer)}
