"""Does each training stage add fidelity? base -> +CPT -> +SFT -> +SFT(reasoning) -> +RL (issue 4).

Collects real terminal episodes, trains the tiny from-scratch model through the stages
(and, with ``--smollm2 DIR``, a prepared SmolLM2 checkpoint with LoRA), and prints one
table of held-out fidelity (exact match, edit similarity, domain score, hybrid reward).

    uv run python bench/stages.py --quick            # a few minutes: a smoke run of the ladder
    uv run python bench/stages.py                    # ~60 minutes on 2 CPU cores
    uv run python bench/stages.py --smollm2 runs/smollm2
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
from agentworld.trainers.models import load_model

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


def ladder(name: str, base: dict, train_eps, items, domain, out: Path, a) -> dict[str, dict]:
    """Train one model through the stages; held-out scores after each."""
    budget = a.minutes * 60 / 4  # seconds per trained stage
    common = {"time_budget_s": budget, "seed": a.seed, **({"max_steps": 6} if a.quick else {})}
    rows = {}
    model, tok = base.pop("_loaded")
    rows["base"] = score(HFWorldModel(model, tok), items, domain, a.max_new_tokens)
    cpt = train("cpt", train_eps, out / "cpt", **base, **common)
    rows["+CPT"] = score(HFWorldModel.from_pretrained(cpt), items, domain, a.max_new_tokens)
    lora = {"lora": base["lora"]} if "lora" in base else {}
    sft = train("sft", train_eps, out / "sft", model=cpt, **lora, **common)
    rows["+CPT+SFT"] = score(HFWorldModel.from_pretrained(sft), items, domain, a.max_new_tokens)
    why = train("sft", train_eps, out / "sft_reasoning", model=cpt, reasoning="domain", **lora, **common)
    rows["+CPT+SFT(reasoning)"] = score(
        HFWorldModel.from_pretrained(why), items, domain, a.max_new_tokens)
    rl = train("rl", train_eps, out / "rl", model=sft, **lora, **common,
               group_size=4, batch_size=2, max_new_tokens=a.max_new_tokens, max_seq_len=768,
               lr=a.rl_lr, kl_coef=0.02, domain="terminal")
    rows["+CPT+SFT+RL"] = score(HFWorldModel.from_pretrained(rl), items, domain, a.max_new_tokens)
    return {f"{name} {k}": v for k, v in rows.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny smoke run (a few minutes)")
    p.add_argument("--episodes", type=int, default=240)
    p.add_argument("--minutes", type=float, default=50.0, help="training minutes per model")
    p.add_argument("--max-transitions", type=int, default=120)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--rl-lr", type=float, default=2e-4)
    p.add_argument("--smollm2", help="prepared SmolLM2 checkpoint dir (agentworld models prepare smollm2)")
    p.add_argument("--out", default="runs/bench_stages")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.quick:
        a.episodes, a.minutes, a.max_transitions, a.max_new_tokens = 30, 2.0, 16, 48
    torch.set_num_threads(2)
    out = Path(a.out)
    domain = plugins.get_domain("terminal")
    t0 = time.perf_counter()
    episodes = collect(domain, a.episodes, policies={"scripted": 0.5, "random": 0.5},
                       seed=a.seed, max_steps=8 if a.quick else 12)
    train_eps, held = split(episodes, 0.2, a.seed)
    items = transitions(held, domain=domain)[: a.max_transitions]
    print(f"collected {len(episodes)} episodes in {time.perf_counter() - t0:.0f} s; "
          f"{len(items)} held-out transitions", flush=True)
    table = {}
    from agentworld.trainers.tokenizer import train_tokenizer
    from agentworld.trainers.loop import corpus_texts

    tok = train_tokenizer(corpus_texts(train_eps), 3072, out / "tokenizer")
    torch.manual_seed(a.seed)
    tiny = "tiny-test" if a.quick else "default"
    table |= ladder("tiny", {"model": tiny, "tokenizer": str(out / "tokenizer"),
                             "_loaded": load_model(tiny, tok)}, train_eps, items, domain, out / "tiny", a)
    if a.smollm2:
        base = {"model": a.smollm2, "lora": {"r": 16, "alpha": 32}, "_loaded": load_model(a.smollm2)}
        table |= ladder("smollm2", base, train_eps, items, domain, out / "smollm2", a)
    lines = ["| model | " + " | ".join(METRICS) + " |", "|---" * (len(METRICS) + 1) + "|"]
    lines += [f"| {k} | " + " | ".join(f"{v[m]:.3f}" for m in METRICS) + " |" for k, v in table.items()]
    print("\n".join(lines))
    (out / "stages.json").write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
