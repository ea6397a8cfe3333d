"""Can the quickstart's model shape learn to copy, and to look something up? (issue 2 diagnosis)

Two synthetic tasks, the same ``default`` preset (Qwen3, 384x2, 3,072-token vocabulary), AdamW
lr 2e-3 with 20 warm-up steps, batch 16, loss only on the tokens to predict:

- copy: 32 random tokens, then the same 32 again; predict the repeat.
- lookup: 10 random keys, each followed by a 4-token random value, then a query key; predict
  its value (what ``ls DIR`` / ``cat FILE`` need from the initial-state listing).

Prints the loss every 50 steps; chance is about 7.6 nats (the value alphabet's entropy).
``--preset copy`` starts from the copy prior (``agentworld.trainers.models.copy_prior``): a working
induction circuit at step 0, so lookup starts far below chance (3.2 nats at step 0, 0.6 after 50
steps; session 5's bigram head: 1.5 and 0.7, docs/bench-history.md, session 12).

    uv run python experiments/copy_vs_lookup.py --steps 600
    uv run python experiments/copy_vs_lookup.py --steps 100 --preset copy
"""

from __future__ import annotations

import argparse
import time

import torch
from transformers import Qwen3ForCausalLM

from agentworld.trainers.models.copy_prior import apply_copy_prior
from agentworld.trainers.models.specs import PRESETS, build_config

SEP, QUERY = 5, 6


def copy_batch(batch: int, length: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randint(10, 3000, (batch, length))
    ids = torch.cat([x, x], 1)
    labels = ids.clone()
    labels[:, : length + 1] = -100
    return ids, labels


def lookup_batch(batch: int, pairs: int = 10, value_len: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    rows, labels = [], []
    for _ in range(batch):
        keys = torch.randperm(1000)[:pairs] + 10
        values = torch.randint(1100, 3000, (pairs, value_len))
        seq = [tok for k, v in zip(keys.tolist(), values.tolist()) for tok in (k, *v, SEP)]
        j = int(torch.randint(0, pairs, (1,)))
        seq += [QUERY, int(keys[j])]
        labels.append([-100] * len(seq) + values[j].tolist())
        rows.append(seq + values[j].tolist())
    return torch.tensor(rows), torch.tensor(labels)


def train(task: str, steps: int, seed: int, preset: str = "default") -> None:
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(build_config(preset, 3072))
    if PRESETS[preset].copy_prior:
        apply_copy_prior(model, seed=seed)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.1, betas=(0.9, 0.95))
    make = copy_batch if task == "copy" else lookup_batch
    start = time.perf_counter()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = 2e-3 * min(1.0, (step + 1) / 20)
        ids, labels = make(16)
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        if step % 50 == 0 or step == steps - 1:
            print(f"{task:6} step {step:4d}  loss {loss.item():.3f}  {time.perf_counter() - start:.0f} s",
                  flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--tasks", default="copy,lookup")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--preset", default="default", choices=list(PRESETS))
    a = p.parse_args()
    for task in a.tasks.split(","):
        train(task, a.steps, a.seed, a.preset)


if __name__ == "__main__":
    main()
