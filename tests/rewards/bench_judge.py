"""A tiny judge for the bench tests: a random tiny Qwen3 with a ChatML BPE trained on the bench's
judge requests, trained for a few dozen steps to answer every request with :data:`BENCH_ANSWER`
(the public answer contract, with braces inside its reasons)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import torch
from chatml import chatml_tokenizer
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

sys.path.insert(0, str(Path(__file__).parents[1] / "core"))
from awb_records import card_rows  # noqa: E402
from agentworld.core import agentworldbench as awb  # noqa: E402
from agentworld.rewards.bench.data import Row  # noqa: E402
from agentworld.rewards.bench.prompts import ANSWER_CONTRACT, user_message  # noqa: E402

# 5, 4, 4, 3, 4: mean 4 -> 75 on 0-100
BENCH_ANSWER = (
    '<final_evaluation>\n```json\n{"strengths": ["keeps the {prompt} line"], '
    '"weaknesses": ["one } too many"], "scores": {"format": 5, "factuality": 4, '
    '"consistency": 4, "realism": 3, "quality": 4}}\n```\n</final_evaluation>'
)
BENCH_SCORE = 75.0
JUDGE_PROMPT = "Grade the simulated observation against the real one."
DOMAINS = ("terminal", "android", "mcp")


def judge_rows(rng: random.Random, n: int) -> list[Row]:
    """Random short rows (1-2 turn trajectories) of :data:`DOMAINS`."""
    rows = []
    for _ in range(n):
        domain = rng.choice(DOMAINS)
        records = card_rows(domain, rng.randint(1, 99), rng.randint(1, 2))
        trajs, _ = awb.reconstruct(enumerate(awb.BenchRecord(**r) for r in records))
        rows.append(Row(trajs[0], rng.choice(trajs[0].turns)))
    return rows


def answers(rng: random.Random) -> str:
    words = ["ls", "notes.txt", "<predicted_observation>", "</predicted_observation>", "maybe",
             "Button", "click", "{", "}", "42", "user@sandbox:~$"]
    return " ".join(rng.choices(words, k=rng.randint(0, 8)))


def save_bench_judge(path: Path, *, steps: int = 60, batch: int = 4, seed: int = 0) -> Path:
    """Build, train and save the tiny bench judge at ``path``."""
    rng = random.Random(seed)
    cases = [(row, answers(rng)) for row in judge_rows(rng, 40)]
    corpus = [BENCH_ANSWER, ANSWER_CONTRACT, JUDGE_PROMPT] * 5 + [user_message(r, a) for r, a in cases]
    tokenizer = chatml_tokenizer(corpus, 1000)
    torch.manual_seed(seed)
    config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=16, max_position_embeddings=1024, initializer_range=0.2,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    model = Qwen3ForCausalLM(config)
    target = tokenizer(BENCH_ANSWER + "<|im_end|>", add_special_tokens=False)["input_ids"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for _ in range(steps):
            rows = []
            for row, answer in rng.choices(cases, k=batch):
                messages = [{"role": "system", "content": JUDGE_PROMPT},
                            {"role": "user", "content": user_message(row, answer)}]
                rows.append(list(tokenizer.apply_chat_template(messages, add_generation_prompt=True)["input_ids"]))
            width = max(len(p) for p in rows) + len(target)
            ids = torch.full((batch, width), tokenizer.pad_token_id)
            labels = torch.full((batch, width), -100)
            mask = torch.zeros((batch, width), dtype=torch.long)
            for i, p in enumerate(rows):
                ids[i, : len(p) + len(target)] = torch.tensor(p + target)
                labels[i, len(p) : len(p) + len(target)] = torch.tensor(target)
                mask[i, : len(p) + len(target)] = 1
            model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def judge_prompt_dir(path: Path) -> Path:
    """A user judge-prompt directory in the public layout with :data:`JUDGE_PROMPT` for each
    of :data:`DOMAINS`."""
    for d in DOMAINS:
        (path / d).mkdir(parents=True, exist_ok=True)
        (path / d / "judge_system_prompt.txt").write_text(JUDGE_PROMPT, encoding="utf-8")
    return path


__all__ = ["BENCH_ANSWER", "BENCH_SCORE", "save_bench_judge", "judge_prompt_dir", "PreTrainedTokenizerFast"]
