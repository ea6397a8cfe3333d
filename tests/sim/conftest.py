"""Tiny local checkpoints for the sim-runtime tests: a trained byte-level BPE tokenizer
with a ChatML template plus random Qwen3 / Llama models built from configs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "You simulate a Linux terminal. Predict the output of each command.",
    "<predicted_observation>\nfile.txt notes.md src\n</predicted_observation>",
    "ls -la /tmp && cat notes.md | grep hello",
    "Initial observation:\nuser@host:~$ ",
    "Task given to the agent: create a file named hello.txt containing world.",
    "The quick brown fox jumps over the lazy dog 0123456789.",
    "<think>the command lists files</think>",
] * 4


def build_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer (vocab ~400) with ChatML specials and template."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(CORPUS, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=CHATML
    )


def save_checkpoint(path: Path, arch: str = "qwen3", *, hidden: int = 64, layers: int = 2,
                    max_positions: int = 512, seed: int = 0) -> Path:
    """Save a random tiny ``arch`` model plus the test tokenizer to ``path``."""
    tokenizer = build_tokenizer()
    common = dict(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=max_positions, initializer_range=0.2,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    if arch == "qwen3":
        model = Qwen3ForCausalLM(Qwen3Config(head_dim=hidden // 4, **common))
    else:
        model = LlamaForCausalLM(LlamaConfig(**common))
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def qwen3_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_checkpoint(tmp_path_factory.mktemp("qwen3"), "qwen3")


@pytest.fixture(scope="session")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_checkpoint(tmp_path_factory.mktemp("llama"), "llama")
