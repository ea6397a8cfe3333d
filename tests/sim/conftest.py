"""Tiny local checkpoints for the sim-runtime tests: a trained byte-level BPE tokenizer
with a ChatML template plus random Qwen3 / Llama models built from configs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from chatml import chatml_tokenizer
from transformers import (
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    Qwen3Config,
    Qwen3ForCausalLM,
)

if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)  # one xdist worker per core: avoid OpenMP oversubscription

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
    return chatml_tokenizer(CORPUS, 400)


def save_checkpoint(
    path: Path,
    arch: str = "qwen3",
    *,
    hidden: int = 64,
    layers: int = 2,
    max_positions: int = 512,
    seed: int = 0,
) -> Path:
    """Save a random tiny ``arch`` model plus the test tokenizer to ``path``."""
    tokenizer = build_tokenizer()
    common = dict(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        initializer_range=0.2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    if arch == "qwen3":
        model = Qwen3ForCausalLM(Qwen3Config(head_dim=hidden // 4, **common))
    elif arch == "gemma3":  # sliding-window layers (window 16) and a full one
        config = Gemma3TextConfig(head_dim=hidden // 4, sliding_window=16, **common)
        config.layer_types = ["sliding_attention"] * (layers - 1) + ["full_attention"]
        model = Gemma3ForCausalLM(config)
    else:
        model = LlamaForCausalLM(LlamaConfig(**common))
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def qwen3_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_checkpoint(tmp_path_factory.mktemp("qwen3"), "qwen3")


@pytest.fixture(scope="session")
def gemma3_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_checkpoint(tmp_path_factory.mktemp("gemma3"), "gemma3")


@pytest.fixture(scope="session")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_checkpoint(tmp_path_factory.mktemp("llama"), "llama")


ANSWER = "<predicted_observation>\nhello.txt\n</predicted_observation>"
ANSWER_WITH_REWARD = ANSWER + "\n<reward>1</reward><terminated>true</terminated>"


def train_constant(
    path: Path, *, steps: int = 60, seed: int = 0, answer: str = ANSWER, transcript: bool = False
) -> Path:
    """Train a tiny Qwen3 for ``steps`` steps to always answer ``answer``; save it to ``path``.

    With ``transcript`` the prompts are CPT transcripts (``transcript_prompt``) and the
    target is ``answer`` followed by the next action line's ``\n>>> ``.
    """
    import random
    import string

    from agentworld.core.formats import transcript_prompt

    save_checkpoint(path, "qwen3", seed=seed)
    model = Qwen3ForCausalLM.from_pretrained(path)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(path)
    rng = random.Random(seed)
    end = "\n>>> " if transcript else "<|im_end|>"
    target = tokenizer(answer + end, add_special_tokens=False)["input_ids"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        rows = []
        for _ in range(6):
            messages = [{"role": "system", "content": rng.choice(CORPUS)}]
            for _ in range(rng.randint(0, 2)):
                messages += [
                    {"role": "user", "content": rng.choice(CORPUS)},
                    {"role": "assistant", "content": answer},
                ]
            action = "".join(rng.choices(string.printable, k=rng.randint(0, 100)))
            messages.append({"role": "user", "content": action})
            if transcript:
                prompt = tokenizer(transcript_prompt(messages), add_special_tokens=False)
            else:
                prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
            prompt = prompt["input_ids"]
            rows.append((list(prompt), target))
        width = max(len(p) + len(t) for p, t in rows)
        ids = torch.full((len(rows), width), tokenizer.pad_token_id)
        labels = torch.full((len(rows), width), -100)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, (p, t) in enumerate(rows):
            ids[i, : len(p) + len(t)] = torch.tensor(p + t)
            labels[i, len(p) : len(p) + len(t)] = torch.tensor(t)
            mask[i, : len(p) + len(t)] = 1
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    model.save_pretrained(path)
    return path


def _shared_checkpoint(base: Path, worker_id: str, name: str, build) -> Path:
    """A checkpoint built once per test run: pytest-xdist workers share it through a file lock."""
    from filelock import FileLock

    root = base if worker_id == "master" else base.parent
    path = root / name
    with FileLock(str(path) + ".lock"):
        if not (path / "model.safetensors").exists():
            build(path)
    return path


@pytest.fixture(scope="session")
def rewarded_dir(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A tiny model trained to answer :data:`ANSWER_WITH_REWARD`, with a world-model card
    saying its answers carry the reward footer."""
    from agentworld.core.card import write_card

    def build(path: Path) -> None:
        train_constant(path, steps=80, answer=ANSWER_WITH_REWARD)
        write_card(path, {"domain": None, "rewards": True, "history_window": 1})

    return _shared_checkpoint(tmp_path_factory.getbasetemp(), worker_id, "sim-rewarded", build)


@pytest.fixture(scope="session")
def trained_dir(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A tiny model trained to answer :data:`ANSWER`, once per test run."""
    return _shared_checkpoint(
        tmp_path_factory.getbasetemp(), worker_id, "sim-trained-constant", train_constant
    )


@pytest.fixture(scope="session")
def transcript_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model trained to continue CPT transcripts with ``hello.txt`` and the next action line."""
    path = tmp_path_factory.mktemp("sim-transcript")
    return train_constant(path, steps=80, answer="hello.txt", transcript=True)


@pytest.fixture(scope="session")
def think_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model trained to answer :data:`ANSWER` after a think block, as SFT with
    rationales trains it."""
    path = tmp_path_factory.mktemp("sim-think")
    return train_constant(path, answer=f"<think>ls ~</think>\n{ANSWER}")
