"""SFT training-step speed of attention kernels and precisions, side by side (issue 2 diagnosis).

    uv run python bench/train_step.py --run runs/quickstart                   # ~2 min on 2 cores
    uv run python bench/train_step.py --run runs/quickstart --variants shipped compiled

Each variant is a copy of ``RUN/checkpoints/cpt`` trained with the quickstart's SFT step (AdamW,
lr 1e-3, betas 0.9/0.95, weight decay 0.1 on matrices, gradient clipping at 1.0, micro-batches of
2 SFT windows of at most 1,024 tokens with domain rationales, from ``RUN/episodes/train.jsonl``).
The variants take their steps interleaved, one step each in turn on the same batch, so a host
that speeds up or slows down during the run affects all alike. Printed per variant: padded
tokens per second over the timed steps, its ratio to ``shipped``, and the mean loss of the first
and last ten steps (the variants compute the same function, so these agree up to precision).

Variants:

- ``shipped``: bf16 autocast (``mixed_precision = "auto"`` on a CPU with AMX/AVX512-BF16) with
  SDPA, which picks ATen's CPU flash kernel;
- ``math``: the same, with SDPA restricted to its math (materialised softmax) kernel;
- ``fp32``: no autocast;
- ``eager``: transformers' eager attention (matmul, softmax, matmul) under bf16 autocast;
- ``compiled``: ``shipped`` with the decoder wrapped in ``torch.compile(dynamic=True)``; its
  compile time is printed separately and not counted;
- ``targets``: ``shipped``, but the output layer and the loss run only at the target positions
  (about a fifth of the tokens) instead of at every position.
"""

from __future__ import annotations

import argparse
import contextlib
import time

import torch
import torch.nn.functional as F
from agentworld.core.io import read_episodes
from agentworld.trainers.training.data import IGNORE_INDEX, batch_stream, collate, sft_samples
from agentworld.trainers.world_model.reasoning import domain_rationales
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import AutoModelForCausalLM, AutoTokenizer

VARIANTS = ("shipped", "math", "fp32", "eager", "compiled", "targets")


def build(name: str, checkpoint: str) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    """A fresh copy of ``checkpoint`` set up as variant ``name``, and its optimizer."""
    torch.manual_seed(0)
    attention = "eager" if name == "eager" else "sdpa"
    model = AutoModelForCausalLM.from_pretrained(checkpoint, attn_implementation=attention)
    if name == "compiled":
        model.model = torch.compile(model.model, dynamic=True)
    matrices = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW(
        [{"params": matrices, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
        lr=1e-3,
        betas=(0.9, 0.95),
    )
    model.train()
    return model, opt


def step(name: str, model: torch.nn.Module, opt: torch.optim.Optimizer, batch: dict) -> float:
    """One optimizer step of variant ``name`` on ``batch``; returns the loss."""
    kernel = sdpa_kernel(SDPBackend.MATH) if name == "math" else contextlib.nullcontext()
    with kernel:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=name != "fp32"):
            if name == "targets":
                hidden = model.model(input_ids=batch["input_ids"], use_cache=False)
                labels = batch["labels"][:, 1:]
                keep = labels != IGNORE_INDEX
                logits = model.lm_head(hidden.last_hidden_state[:, :-1][keep])
                loss = F.cross_entropy(logits.float(), labels[keep])
            else:
                loss = model(**batch, use_cache=False).loss
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad()
    return loss.item()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--run", required=True, help="run directory (checkpoints/cpt, episodes/)")
    p.add_argument(
        "--variants", nargs="+", choices=VARIANTS, default=["shipped", "math", "fp32", "eager"]
    )
    p.add_argument("--steps", type=int, default=40, help="timed steps per variant")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    p.add_argument("--episodes", type=int, default=200, help="train episodes to draw batches from")
    args = p.parse_args()
    variants = ["shipped", *(v for v in args.variants if v != "shipped")]
    checkpoint = f"{args.run}/checkpoints/cpt"
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    episodes = read_episodes(f"{args.run}/episodes/train.jsonl")[: args.episodes]
    samples = sft_samples(episodes, tokenizer, 1024, domain_rationales(episodes, None))
    stream = batch_stream(samples, 2, 0)
    batches = [
        collate(next(stream), tokenizer.pad_token_id) for _ in range(args.warmup + args.steps)
    ]
    models = {name: build(name, checkpoint) for name in variants}
    seconds = dict.fromkeys(variants, 0.0)
    losses: dict[str, list[float]] = {name: [] for name in variants}
    for i, batch in enumerate(batches):
        for name, (model, opt) in models.items():
            start = time.perf_counter()
            losses[name].append(step(name, model, opt, batch))
            if i >= args.warmup:
                seconds[name] += time.perf_counter() - start
            elif i == 0 and name == "compiled":
                print(f"compiled: first step (compiling) {time.perf_counter() - start:.0f} s")
    tokens = sum(b["input_ids"].numel() for b in batches[args.warmup :])
    print(
        f"{torch.get_num_threads()} threads; {args.steps} timed steps of micro-batch 2 per variant"
    )
    print("variant    padded tokens/s  vs shipped  loss first 10  loss last 10")
    for name in variants:
        rate = tokens / seconds[name]
        first, last = losses[name][:10], losses[name][-10:]
        print(
            f"{name:9s}  {rate:15.0f}  {seconds['shipped'] / seconds[name]:10.2f}"
            f"  {sum(first) / len(first):13.3f}  {sum(last) / len(last):12.3f}"
        )


if __name__ == "__main__":
    main()
