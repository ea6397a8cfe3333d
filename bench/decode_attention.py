"""Decode attention on a CPU, side by side: masked vs unmasked SDPA, and both against a plain read.

    uv run python bench/decode_attention.py                # B3's late-step shape, < 1 min
    uv run python bench/decode_attention.py --positions 800 1800 --episodes 64
    uv run python bench/decode_attention.py --dtypes float32 bfloat16 float16   # 16-bit K/V

One decode step of ``--episodes`` sequences (grouped-query layout of `sim_throughput.py`'s model:
2 KV heads, 2 query heads each, head_dim 64; fp32 unless ``--dtypes`` says otherwise, queries
and K/V alike) over ``--positions`` cached positions, per
layer, cycling through ``--layers`` separate K/V tensors so they do not stay in the CPU cache (as
in the engine, whose layers' K/V together exceed it). Printed per context length:

- SDPA with an additive mask (what a group of unequal lengths needs) and without one (what
  ``agentworld.sim.engine`` uses for equal-length decode groups): ms per layer and their ratio;
- the bytes of K and V read per second by unmasked SDPA, over those a plain ``sum`` of the same
  tensors reads per second: how close decode attention is to the machine's streaming bandwidth.

With several ``--dtypes`` each dtype gets its rows, measured one after the other in the same run,
so a 16-bit KV cache's effect (half the bytes to read) shows as a ratio of the unmasked times.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F


def per_layer_s(fn, layers: list[tuple[torch.Tensor, torch.Tensor]], repeats: int) -> float:
    """Mean seconds of ``fn(k, v)`` over ``repeats`` passes through all ``layers``."""
    for k, v in layers:  # warm up
        fn(k, v)
    start = time.perf_counter()
    for _ in range(repeats):
        for k, v in layers:
            fn(k, v)
    return (time.perf_counter() - start) / (repeats * len(layers))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--episodes", type=int, default=64)
    p.add_argument("--positions", type=int, nargs="+", default=[800, 1800])
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--dtypes", nargs="+", default=["float32"], help="torch dtypes of Q, K and V")
    args = p.parse_args()
    n, kv_heads, rep, head_dim = args.episodes, 2, 2, 64
    torch.manual_seed(0)
    print(f"{torch.get_num_threads()} threads; {n} sequences, {args.layers} layers cycled")
    print(
        "dtype      positions  masked ms  unmasked ms  masked/unmasked  SDPA GB/s  sum GB/s  SDPA/sum"
    )
    for name in args.dtypes:
        dtype = getattr(torch, name)
        q = torch.randn(n, kv_heads, rep, head_dim, dtype=dtype)
        for positions in args.positions:
            shape = (n, kv_heads, positions, head_dim)
            layers = [
                (torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype))
                for _ in range(args.layers)
            ]
            mask = torch.zeros(n, 1, rep, positions, dtype=dtype)
            mask[..., positions - 5 :] = float("-inf")  # a padded last block
            masked = per_layer_s(
                lambda k, v, q=q, m=mask: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                layers,
                args.repeats,
            )
            unmasked = per_layer_s(
                lambda k, v, q=q: F.scaled_dot_product_attention(q, k, v), layers, args.repeats
            )
            read = per_layer_s(lambda k, v: (k.sum(), v.sum()), layers, args.repeats)
            nbytes = 2 * layers[0][0].numel() * layers[0][0].element_size()
            print(
                f"{name:9s}  {positions:9d}  {masked * 1e3:9.2f}  {unmasked * 1e3:11.2f}"
                f"  {masked / unmasked:15.2f}  {nbytes / unmasked / 1e9:9.1f}"
                f"  {nbytes / read / 1e9:8.1f}  {read / unmasked:8.2f}"
            )


if __name__ == "__main__":
    main()
