"""SFT from a base-model directory of another family: its stock chat template, its
architecture, LoRA with ``target_modules="all-linear"``, and the attention implementation the
architecture supports (SDPA where transformers has it, eager for gpt-oss).

Each model is random and tiny (built from a config), saved with a tokenizer built locally from
the family's stock template (``test_chat_mask.family_tokenizer``), and trained for two steps
through the same ``SftTrainer`` that ``agentworld train sft --model DIR`` runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_chat_mask import family_tokenizer
from transformers import (
    AutoModelForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GPT2Config,
    GPT2LMHeadModel,
    GptOssConfig,
    GptOssForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

from agentworld.trainers.models.specs import load_model
from agentworld.trainers.world_model.sft import SftTrainer


def tiny(arch: str, vocab: int) -> torch.nn.Module:
    torch.manual_seed(0)
    if arch == "qwen3":
        cfg = Qwen3Config(
            vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, head_dim=16,
            max_position_embeddings=1024,
        )  # fmt: skip
        return Qwen3ForCausalLM(cfg)
    if arch == "gemma3":
        cfg = Gemma3TextConfig(
            vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, head_dim=16,
            max_position_embeddings=1024, sliding_window=64,
        )  # fmt: skip
        return Gemma3ForCausalLM(cfg)
    if arch == "gptoss":  # no SDPA in transformers (attention sinks): eager attention
        cfg = GptOssConfig(
            vocab_size=vocab, hidden_size=32, intermediate_size=32, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, head_dim=16, num_local_experts=2,
            num_experts_per_tok=1, max_position_embeddings=1024, sliding_window=64,
            layer_types=["full_attention"],
        )  # fmt: skip
        return GptOssForCausalLM(cfg)
    cfg = GPT2Config(vocab_size=vocab, n_embd=32, n_layer=1, n_head=2, n_positions=1024)
    return GPT2LMHeadModel(cfg)


@pytest.mark.parametrize(
    ("arch", "template", "lora"),
    [("qwen3", "qwen3", None), ("qwen3", "qwen3", "all-linear"),
     ("gemma3", "gemma3", "all-linear"), ("gpt2", "phi3_5", "all-linear"),
     ("gptoss", "gptoss", None)],
)  # fmt: skip
def test_sft_from_a_base_model_directory(arch, template, lora, episodes, tmp_path: Path) -> None:
    tok = family_tokenizer(template)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    base = tmp_path / "base"
    model = tiny(arch, len(tok))
    model.save_pretrained(base)
    tok.save_pretrained(base)
    options = {
        "model": str(base), "output_dir": str(tmp_path / "out"), "max_steps": 2,
        "batch_size": 2, "max_seq_len": 512, "warmup_steps": 0, "lr": 1e-2, "log_every": 1,
    }  # fmt: skip
    if lora:
        options["lora"] = {"r": 2, "alpha": 4, "target_modules": lora}
    # SDPA where the architecture has it; gpt-oss has none (asking for it crashed the run)
    attention = "eager" if arch == "gptoss" else "sdpa"
    assert load_model(base)[0].config._attn_implementation == attention
    out = Path(SftTrainer().train(episodes, options))
    assert len((out / "train_log.jsonl").read_text().splitlines()) == 2
    trained = AutoModelForCausalLM.from_pretrained(out)
    assert type(trained) is type(model)
    assert not any("lora" in name for name in trained.state_dict())
    changed = [
        name
        for name, p in model.state_dict().items()
        if not torch.equal(p, trained.state_dict()[name])
    ]
    assert changed  # training moved weights
    if lora:
        adapted = (out / "adapter" / "adapter_config.json").read_text()
        assert '"lm_head"' not in adapted
        # every linear layer but the head took part: the merged weights of each changed
        linear = {"qwen3": "mlp.down_proj", "gemma3": "self_attn.q_proj", "gpt2": "attn.c_attn"}
        assert any(linear[arch] in name for name in changed)
        assert not any("embed" in name or "wte" in name for name in changed)


def test_a_checkpoint_trained_on_longer_windows_declares_that_context(episodes, tmp_path) -> None:
    """A rotary base whose config states fewer positions than ``max_seq_len``: the trained
    checkpoint states ``max_seq_len``, so inference does not cut prompts to the shorter one."""
    tok = family_tokenizer("qwen3")
    base = tmp_path / "base"
    model = tiny("qwen3", len(tok))
    model.config.max_position_embeddings = 128
    model.save_pretrained(base)
    tok.save_pretrained(base)
    options = {"model": str(base), "output_dir": str(tmp_path / "out"), "max_steps": 1,
               "batch_size": 1, "max_seq_len": 512, "warmup_steps": 0, "log_every": 1}
    out = Path(SftTrainer().train(episodes, options))
    assert AutoModelForCausalLM.from_pretrained(out).config.max_position_embeddings == 512
