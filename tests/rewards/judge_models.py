"""Tiny judge checkpoints for the reward tests: a byte-level BPE tokenizer trained on our judge
prompts (ChatML template), a random tiny Qwen3, and training it for a few dozen steps to
answer every judge request with :data:`JUDGE_ANSWER`."""

from __future__ import annotations

import random
from pathlib import Path

import torch
from chatml import chatml_tokenizer
from agentworld.rewards.judge import LLMJudge
from agentworld.rewards.rubrics import ANSWER_FORMAT, GENERIC_RUBRIC, TERMINAL_RUBRIC
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

# 5, 4, 4, 3, 4 -> 100, 75, 75, 50, 75 on 0-100 -> reward 0.75
JUDGE_ANSWER = '{"format": 5, "factuality": 4, "consistency": 4, "realism": 3, "quality": 4}'
JUDGE_VALUE = 0.75
CUSTOM_RUBRIC = "Grade the prediction against the reference, strictly."
WORDS = [
    "ls",
    "cat",
    "pwd",
    "notes.txt",
    "docs",
    "todo.txt",
    "hello",
    "world",
    "No",
    "such",
    "file",
    "or",
    "directory",
    "42",
    "src",
    "a",
    "b",
]


def random_case(rng: random.Random) -> tuple[str, str, dict]:
    """A random ``(prediction, reference, context)`` of the terminal or another domain."""

    def text() -> str:
        lines = [
            " ".join(rng.choices(WORDS, k=rng.randint(1, 5))) for _ in range(rng.randint(0, 3))
        ]
        return "\n".join([*lines, "user@sandbox:~$ "])

    context: dict = {"domain": rng.choice(["terminal", "web", None])}
    if rng.random() < 0.7:
        context["action"] = " ".join(rng.choices(WORDS, k=rng.randint(1, 3)))
    return text(), text(), context


def build_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level BPE (vocab 1000) trained on the judge prompts, with ChatML specials."""
    rng = random.Random(0)
    corpus = [GENERIC_RUBRIC, TERMINAL_RUBRIC, ANSWER_FORMAT, JUDGE_ANSWER, CUSTOM_RUBRIC] * 3
    corpus += ["\n".join(random_case(rng)[:2]) for _ in range(30)]
    return chatml_tokenizer(corpus, 1000)


def save_judge(path: Path, *, seed: int = 0) -> Path:
    """A random tiny Qwen3 (2 layers, hidden 64, 1024 positions, fp32) and its tokenizer."""
    tokenizer = build_tokenizer()
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=1024,
        initializer_range=0.2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    Qwen3ForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def judge_batch(tokenizer, judge: LLMJudge, rng: random.Random, batch: int):
    """``(input_ids, attention_mask, labels)`` ``[batch, seq_len]`` of random judge requests
    answered with :data:`JUDGE_ANSWER` (loss on the answer tokens only)."""
    target = tokenizer(JUDGE_ANSWER + "<|im_end|>", add_special_tokens=False)["input_ids"]
    rows = []
    for _ in range(batch):
        prediction, reference, context = random_case(rng)
        if rng.random() < 0.1:
            prediction = ""
        if rng.random() < 0.25:
            context["domain"] = "custom"
        messages = judge.messages(prediction, reference, context)
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True)["input_ids"]
        rows.append(list(prompt))
    width = max(len(p) for p in rows) + len(target)
    ids = torch.full((batch, width), tokenizer.pad_token_id)
    labels = torch.full((batch, width), -100)
    mask = torch.zeros((batch, width), dtype=torch.long)
    for i, p in enumerate(rows):
        end = len(p) + len(target)
        ids[i, :end] = torch.tensor(p + target)
        labels[i, len(p) : end] = torch.tensor(target)
        mask[i, :end] = 1
    return ids, mask, labels


def train_judge(path: Path, *, steps: int = 40, batch: int = 4, seed: int = 0) -> Path:
    """Train the tiny judge at ``path`` to answer :data:`JUDGE_ANSWER` to the judge requests
    :class:`LLMJudge` builds (our rubrics or :data:`CUSTOM_RUBRIC`, random cases)."""
    model = Qwen3ForCausalLM.from_pretrained(path)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(path)
    judge = LLMJudge("judge", base_url="http://127.0.0.1:9/v1", check=False)  # messages only
    judge.rubrics["custom"] = CUSTOM_RUBRIC
    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 2 threads on a busy 2-core machine ran 4x slower here
    try:
        for _ in range(steps):
            ids, mask, labels = judge_batch(tokenizer, judge, rng, batch)
            model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    finally:
        torch.set_num_threads(threads)
    judge.close()
    model.eval()
    model.save_pretrained(path)
    return path
