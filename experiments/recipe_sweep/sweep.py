"""GPU recipe sweep: which CPT/SFT recipe makes a tiny Qwen3 world model copy from context soonest.

A standalone copy of the trainers' recipe (AdamW betas 0.9/0.95, weight decay 0.01 on matrices,
20 warm-up steps, cosine to 0.1, clip 1.0, assistant-only SFT mask) so many recipes run in minutes
on one GPU at the token counts a 2-core CPU reaches in the quickstart's budget. Data from
``prep.py``; ``RUNS.json`` is a list of runs, e.g.
``{"name": "base", "data": "small", "cpt_tokens": 840000, "tokens": 3400000}`` with optional
``arch`` ``[hidden, layers, heads, kv_heads, mlp]``, ``lr``, ``bs``, ``synth_tokens``.

    python experiments/recipe_sweep/sweep.py DATA_DIR small RUNS.json    # DEV=cpu for a CPU run

Prints one JSON line per run (train loss, held-out exact match overall and on non-empty outputs)
and appends it to ``$OUT/results.jsonl``. Results: ``docs/bench-history.md``, "Recipe sweep on a GPU".
"""

import json
import math
import os
import random
import sys
import time
import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
dev = os.environ.get("DEV", "cuda")
OUT = os.environ.get("OUT", "/tmp")
DATA_DIR = sys.argv[1]
data = {k: torch.load(f"{DATA_DIR}/{k}.pt") for k in sys.argv[2].split(",")}
runs = json.loads(open(sys.argv[3]).read()) if len(sys.argv) > 3 else []


def build(arch, d):
    h, L, H, KV, inter = arch
    cfg = Qwen3Config(
        vocab_size=d["vocab"],
        hidden_size=h,
        num_hidden_layers=L,
        num_attention_heads=H,
        num_key_value_heads=KV,
        head_dim=64,
        intermediate_size=inter,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        rms_norm_eps=1e-6,
        eos_token_id=d["eos"],
        pad_token_id=d["pad"],
        bos_token_id=None,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )
    torch.manual_seed(0)
    return Qwen3ForCausalLM(cfg).to(dev)


def batches(samples, bs, rng):
    order = list(range(len(samples)))
    while True:
        rng.shuffle(order)
        for c in range(0, len(order), 50 * bs):
            part = sorted(order[c : c + 50 * bs], key=lambda i: len(samples[i][0]))
            bl = [part[i : i + bs] for i in range(0, len(part), bs)]
            rng.shuffle(bl)
            for b in bl:
                yield [samples[i] for i in b]


def collate(batch, pad):
    w = max(len(s[0]) for s in batch)
    ids = torch.full((len(batch), w), pad)
    lab = torch.full((len(batch), w), -100)
    for r, (x, m) in enumerate(batch):
        x = torch.as_tensor(x).long()
        m = torch.as_tensor(m).bool()
        ids[r, : len(x)] = x
        lab[r, : len(x)] = torch.where(m, x, -100)
    return ids.to(dev), lab.to(dev)


def train(model, samples, tokens, lr, bs, pad, seed=0, warmup=20, log=None):
    dec = [p for n, p in model.named_parameters() if p.ndim >= 2]
    rest = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW(
        [{"params": dec, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}],
        lr=lr,
        betas=(0.9, 0.95),
    )
    mean_len = sum(len(s[0]) for s in samples) / len(samples)
    total = max(1, int(tokens / (mean_len * bs)))
    rng = random.Random(seed)
    it = batches(samples, bs, rng)
    seen = 0
    step = 0
    losses = []
    model.train()
    while step < total:
        f = (
            (step + 1) / (warmup + 1)
            if step < warmup
            else 0.1
            + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1, (step - warmup) / max(1, total - warmup))))
        )
        for g in opt.param_groups:
            g["lr"] = lr * f
        ids, lab = collate(next(it), pad)
        loss = model(input_ids=ids, labels=lab).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        seen += ids.numel()
        step += 1
        losses.append(loss.item())
    return {"steps": step, "tokens": seen, "loss": sum(losses[-20:]) / len(losses[-20:])}


@torch.no_grad()
def evaluate(model, d, n=int(os.environ.get("EVAL_N", 400)), max_new=200):
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(f"{DATA_DIR}/tokenizer.json")
    model.eval()
    items = d["eval"][:n]
    order = sorted(range(len(items)), key=lambda i: len(items[i]["ids"]))
    preds = [None] * len(items)
    for c in range(0, len(order), 100):
        chunk = order[c : c + 100]
        w = max(len(items[i]["ids"]) for i in chunk)
        ids = torch.full((len(chunk), w), d["pad"])
        mask = torch.zeros((len(chunk), w), dtype=torch.long)
        for r, i in enumerate(chunk):
            x = items[i]["ids"]
            ids[r, w - len(x) :] = torch.tensor(x)
            mask[r, w - len(x) :] = 1
        out = model.generate(
            input_ids=ids.to(dev),
            attention_mask=mask.to(dev),
            max_new_tokens=max_new,
            do_sample=False,
            eos_token_id=d["stop"],
            pad_token_id=d["pad"],
        )
        for r, i in enumerate(chunk):
            preds[i] = tok.decode(out[r, w:].tolist(), skip_special_tokens=True)
    ex = []
    ne = []
    for it, p in zip(items, preds):
        s = p.strip()
        obs = None
        if s.count("<predicted_observation>") == 1 and s.count("</predicted_observation>") == 1:
            obs = s.split("<predicted_observation>")[1].split("</predicted_observation>")[0]
            obs = obs[1:] if obs.startswith("\n") else obs
            obs = obs[:-1] if obs.endswith("\n") else obs
            obs = "\n".join(line.rstrip() for line in obs.replace("\r\n", "\n").split("\n")).rstrip(
                "\n"
            )
        hit = float(obs is not None and obs == it["ref"])
        ex.append(hit)
        if it["nonempty"]:
            ne.append(hit)
    model.train()
    return {
        "exact": round(sum(ex) / len(ex), 3),
        "nonempty": round(sum(ne) / max(1, len(ne)), 3),
        "n_ne": len(ne),
        "sample": preds[order[-1]][:300],
    }


def synth(d, tokens, length):
    """Repeated random segments: the only way to predict a repeat is to copy it from context."""
    g = torch.Generator().manual_seed(1)
    out = []
    for _ in range(int(tokens / length) + 8):
        segs = [
            torch.randint(
                3, d["vocab"] - 8, (int(torch.randint(4, 48, (1,), generator=g)),), generator=g
            )
            for _ in range(12)
        ]
        seq = []
        while sum(len(s) for s in seq) < length:
            seq.append(segs[int(torch.randint(0, len(segs), (1,), generator=g))])
        x = torch.cat(seq)[:length]
        out.append((x, torch.ones(len(x), dtype=torch.bool)))
    return out


for run in runs:
    t0 = time.time()
    d = data[run.get("data", "small")]
    ev = data[run.get("evaldata", "small")]
    model = build(run.get("arch", [384, 2, 6, 1, 1024]), d)
    res = {"name": run["name"]}
    if run.get("synth_tokens"):
        res["synth"] = train(
            model,
            synth(d, run["synth_tokens"], run.get("synth_len", 1024)),
            run["synth_tokens"],
            run.get("synth_lr", 2e-3),
            8,
            d["pad"],
        )
    if run.get("cpt_tokens"):
        blocks = [(b, torch.ones(len(b), dtype=torch.bool)) for b in d["cpt"]]
        res["cpt"] = train(model, blocks, run["cpt_tokens"], run.get("cpt_lr", 1e-3), 8, d["pad"])
    checkpoints = run.get("evals", [run["tokens"]])
    res["sft"] = train(
        model, d["sft"], run["tokens"], run.get("lr", 2e-3), run.get("bs", 8), d["pad"]
    )
    res["eval"] = evaluate(model, ev)
    res["secs"] = round(time.time() - t0, 1)
    line = json.dumps(res)
    print(line, flush=True)
    with open(f"{OUT}/results.jsonl", "a") as f:
        f.write(line + "\n")
