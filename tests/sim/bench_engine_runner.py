"""Micro-benchmark of the model runner's decode step (a script, not a test).

    uv run python tests/sim/bench_engine_runner.py [--seqs 64] [--context 500] [--threads 2]

Builds a random Qwen3 (default ~12M parameters: hidden 256, 8 layers, 4 query / 2
key-value heads of 64, vocab 8192), prefills ``--seqs`` sequences of ``--context``
tokens, then times decode steps of one token per sequence. Prints the step time,
the part spent inside the paged attention function (key/value writes, block-table
gathers and SDPA, summed over layers), the host-side preparation of the batch, and
the same step through stock transformers (``sdpa`` over a ``DynamicCache``).

Measured 2026-11-30 (defaults: 12.1M params, 64 seqs x 500 context, median of 5):
- CPU, 2 threads of an otherwise idle 16-core x86-64 host, fp32: paged step 48.9 ms
  (1310 tokens/s), of which attention 34.4 ms (70%) and prepare 1.2 ms; stock
  transformers 69.0 ms. The KV cache read per step (262 MB fp32) is 5x the weights,
  so attention dominates at this context; gather + SDPA moves ~23 GB/s.
- H200, bf16: paged 9.5 ms (attention 1.7 ms, prepare 1.3 ms) vs stock 6.9 ms; a 0.5B
  Qwen3-shaped model (hidden 1024, 28 layers): 58.8 ms vs 48.5 ms. Both are bound by
  kernel launches (no CUDA graphs here).
"""

from __future__ import annotations

import argparse
import time

import torch
from transformers import AttentionInterface, DynamicCache, Qwen3Config, Qwen3ForCausalLM

from agentworld.sim.engine import attention
from agentworld.sim.engine.runner import ForwardItem, ModelRunner


def build_model(args: argparse.Namespace) -> Qwen3ForCausalLM:
    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        intermediate_size=4 * args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        head_dim=args.hidden // args.heads,
        max_position_embeddings=4096,
    )
    model = Qwen3ForCausalLM(config).eval()
    return model.to(device=args.device, dtype=getattr(torch, args.dtype))


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, repeats: int, device: str) -> float:
    """Median seconds of ``fn()`` over ``repeats`` runs (after one warm-up)."""
    fn()
    times = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seqs", type=int, default=64)
    parser.add_argument("--context", type=int, default=500)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=8192)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dev = args.device
    model = build_model(args)
    params = sum(p.numel() for p in model.parameters())
    bs = 16
    per_seq = -(-(args.context + args.repeats + 2) // bs)
    runner = ModelRunner(model, num_blocks=args.seqs * per_seq, block_size=bs)
    tables = [list(range(i * per_seq, (i + 1) * per_seq)) for i in range(args.seqs)]
    gen = torch.Generator().manual_seed(0)
    prompts = torch.randint(0, args.vocab, (args.seqs, args.context), generator=gen)
    for i in range(0, args.seqs, 8):
        chunk = range(i, min(i + 8, args.seqs))
        runner.forward([ForwardItem(prompts[j].tolist(), 0, tables[j], True) for j in chunk])
    items = [ForwardItem([1], args.context, tables[j], True) for j in range(args.seqs)]
    step = timed(lambda: runner.forward(items), args.repeats, dev)

    spent = [0.0]
    inner = attention.paged_attention

    def timing(*a, **k):
        sync(dev)
        start = time.perf_counter()
        out = inner(*a, **k)
        sync(dev)
        spent[0] += time.perf_counter() - start
        return out

    AttentionInterface.register(attention.ATTENTION_NAME, timing)
    for _ in range(args.repeats):
        runner.forward(items)
    attn = spent[0] / args.repeats
    AttentionInterface.register(attention.ATTENTION_NAME, inner)
    prep = timed(lambda: runner.prepare(items), args.repeats, dev)

    # Stock transformers: sdpa over a DynamicCache holding the same contexts (no padding).
    model.set_attn_implementation("sdpa")
    cache = DynamicCache(config=model.config)
    with torch.inference_mode():
        model(input_ids=prompts.to(dev), cache=cache, use_cache=True, logits_to_keep=1)

        def hf_step():
            model(
                input_ids=torch.ones(args.seqs, 1, dtype=torch.long, device=dev),
                position_ids=torch.full((args.seqs, 1), args.context, device=dev),
                cache=cache,
                use_cache=True,
            )
            cache.crop(-1)

        hf = timed(hf_step, args.repeats, dev)
    print(
        f"model {params / 1e6:.1f}M params {args.dtype} on {dev}, {args.seqs} seqs x "
        f"{args.context} context, {torch.get_num_threads()} threads"
    )
    print(
        f"paged decode step {step * 1e3:.2f} ms ({args.seqs / step:.0f} tokens/s); "
        f"attention {attn * 1e3:.2f} ms ({attn / step:.0%}), prepare {prep * 1e3:.2f} ms"
    )
    print(f"HF sdpa + DynamicCache decode step {hf * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
