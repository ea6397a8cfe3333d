"""Does each training stage add fidelity? base -> +CPT -> +SFT -> +SFT(reasoning) -> +RL (issue 4).

Collects real terminal episodes, trains the tiny from-scratch model and SmolLM2 (LoRA) through
the stages, and prints one table of held-out fidelity (exact match, edit similarity, domain
score, hybrid reward). Base and CPT-only models are also scored on the CPT transcript
(``... (transcript)`` rows): they never learned the chat answer format.

    uv run python bench/stages.py --quick            # under a minute; a smoke run, scores ~0
    uv run python bench/stages.py                    # ~60 minutes on 2 CPU cores, both models
    uv run python bench/stages.py --models tiny --tiny-minutes 28   # the tiny model only

By default SmolLM2 is prepared into ``--smollm2`` (``agentworld models prepare smollm2``) when
that directory does not hold a checkpoint yet. The table is rewritten to ``OUT/stages.json``
after every row, so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from agentworld.core import plugins
from agentworld.core.collect import collect, split
from agentworld.core.evaluate import evaluate, transitions
from agentworld.sim.backends.hf import HFWorldModel
from agentworld.trainers.models.specs import load_model

METRICS = ("exact_match", "edit_similarity", "domain", "hybrid")


def train(stage: str, episodes, out: Path, **options) -> str:
    t0 = time.perf_counter()
    path = plugins.get_trainer(stage).train(episodes, {"output_dir": str(out), **options})
    print(f"  {stage} -> {path} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return path


def score(world_model, items, domain, max_new_tokens: int) -> dict[str, float]:
    rewards = {m: plugins.get_reward(m) for m in METRICS}
    result = evaluate({"m": world_model}, items, rewards, domain=domain, max_new_tokens=max_new_tokens)
    return {m: result.overall["m"][m].mean for m in METRICS}


def ladder(name: str, base: dict, minutes: float, train_eps, items, domain, out: Path, a,
           table: dict, **train_opts) -> None:
    """Train one model through the stages, adding its held-out scores after each to ``table``."""
    budget = minutes * 60 / 4  # seconds per trained stage
    common = {"time_budget_s": budget, "seed": a.seed, **({"max_steps": 6} if a.quick else {}),
              **train_opts}

    def row(stage: str, world_model) -> None:
        t0 = time.perf_counter()
        table[f"{name} {stage}"] = score(world_model, items, domain, a.max_new_tokens)
        print(f"  eval {name} {stage}: {table[f'{name} {stage}']} ({time.perf_counter() - t0:.0f} s)",
              flush=True)
        (Path(a.out) / "stages.json").write_text(json.dumps(table, indent=1))

    # Base and CPT-only models are also scored on the CPT transcript (the text CPT trains on;
    # they never learned the chat answer format, where they score ~0).
    model, tok = base.pop("_loaded")
    row("base", HFWorldModel(model, tok))
    row("base (transcript)", HFWorldModel(model, tok, prompt_format="transcript"))
    del model
    cpt = train("cpt", train_eps, out / "cpt", **base, **common)
    row("+CPT", HFWorldModel.from_pretrained(cpt))
    row("+CPT (transcript)", HFWorldModel.from_pretrained(cpt, prompt_format="transcript"))
    lora = {"lora": base["lora"]} if "lora" in base else {}
    sft = train("sft", train_eps, out / "sft", model=cpt, **lora, **common)
    row("+CPT+SFT", HFWorldModel.from_pretrained(sft))
    why = train("sft", train_eps, out / "sft_reasoning", model=cpt, reasoning="domain", **lora, **common)
    row("+CPT+SFT(reasoning)", HFWorldModel.from_pretrained(why))
    rl_opts = {**common, "batch_size": 2, "lr": a.rl_lr}
    rl = train("rl", train_eps, out / "rl", model=sft, **lora, **rl_opts,
               group_size=4, max_new_tokens=a.max_new_tokens, max_seq_len=768,
               beta=0.02, domain="terminal")
    row("+CPT+SFT+RL", HFWorldModel.from_pretrained(rl))


def smollm2_dir(path: str) -> str:
    """``path`` holding a prepared SmolLM2 checkpoint, preparing it first when it holds none."""
    from agentworld.trainers.models.specs import is_checkpoint_dir
    from agentworld.trainers.models.pretrained import prepare_base

    if not is_checkpoint_dir(path):
        prepare_base("smollm2", path, force=True, log=lambda line: print(f"  {line}", flush=True))
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smoke run (< 1 min, scores ~0)")
    p.add_argument("--episodes", type=int, default=2000)
    p.add_argument("--tiny-minutes", type=float, default=20.0,
                   help="training minutes of the tiny model, split over its 4 trained stages")
    p.add_argument("--smollm2-minutes", type=float, default=20.0,
                   help="training minutes of SmolLM2 (LoRA), split over its 4 trained stages")
    p.add_argument("--max-transitions", type=int, default=120)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--rl-lr", type=float, default=2e-4)
    p.add_argument("--smollm2-lr", type=float, default=1e-3, help="CPT/SFT learning rate of the LoRA")
    p.add_argument("--smollm2", default="runs/smollm2",
                   help="SmolLM2 checkpoint dir; prepared there when missing")
    p.add_argument("--models", default="tiny,smollm2", help="comma-separated: tiny, smollm2")
    p.add_argument("--out", default="runs/bench_stages")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.quick:
        a.episodes, a.max_transitions, a.max_new_tokens = 30, 16, 48
        a.tiny_minutes = a.smollm2_minutes = 2.0
    torch.set_num_threads(2)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    domain = plugins.get_domain("terminal")
    t0 = time.perf_counter()
    episodes = collect(domain, a.episodes, policies={"scripted": 0.5, "random": 0.5},
                       seed=a.seed, max_steps=8 if a.quick else 12)
    train_eps, held = split(episodes, 0.2, a.seed)
    items = transitions(held, domain=domain)[: a.max_transitions]
    print(f"collected {len(episodes)} episodes in {time.perf_counter() - t0:.0f} s; "
          f"{len(items)} held-out transitions", flush=True)
    table = {}
    from agentworld.trainers.models.tokenizer import train_tokenizer
    from agentworld.trainers.training.base import corpus_texts

    tok = train_tokenizer(corpus_texts(train_eps), 3072, out / "tokenizer")
    torch.manual_seed(a.seed)
    tiny = "tiny-test" if a.quick else "default"
    models = a.models.split(",")
    if unknown := set(models) - {"tiny", "smollm2"}:
        p.error(f"unknown --models {sorted(unknown)}; valid: tiny, smollm2")
    if "tiny" in models:
        ladder("tiny", {"model": tiny, "tokenizer": str(out / "tokenizer"),
                        "_loaded": load_model(tiny, tok)},
               a.tiny_minutes, train_eps, items, domain, out / "tiny", a, table)
    if "smollm2" in models:
        path = smollm2_dir(a.smollm2)
        base = {"model": path, "lora": {"r": 16, "alpha": 32}, "_loaded": load_model(path)}
        # 135M parameters train at ~150 tokens/s here: small batches give more optimizer steps.
        ladder("smollm2", base, a.smollm2_minutes, train_eps, items, domain, out / "smollm2", a,
               table, batch_size=2, lr=a.smollm2_lr)
    lines = ["| model | " + " | ".join(METRICS) + " |", "|---" * (len(METRICS) + 1) + "|"]
    lines += [f"| {k} | " + " | ".join(f"{v[m]:.3f}" for m in METRICS) + " |" for k, v in table.items()]
    print("\n".join(lines))
    print(f"wall time {(time.perf_counter() - start) / 60:.1f} min")
    (out / "stages.json").write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
