"""Decode attention on a CPU, side by side: masked vs unmasked SDPA, and both against a plain read.

    uv run python bench/decode_attention.py                # B3's late-step shape, < 1 min
    uv run python bench/decode_attention.py --positions 800 1800 --episodes 64

One decode step of ``--episodes`` sequences (grouped-query layout of `sim_throughput.py`'s model:
2 KV heads, 2 query heads each, head_dim 64, fp32) over ``--positions`` cached positions, per
layer, cycling through ``--layers`` separate K/V tensors so they do not stay in the CPU cache (as
in the engine, whose layers' K/V together exceed it). Printed per context length:

- SDPA with an additive mask (what a group of unequal lengths needs) and without one (what
  ``agentworld.sim.engine`` uses for equal-length decode groups): ms per layer and their ratio;
- the bytes of K and V read per second by unmasked SDPA, over those a plain ``sum`` of the same
  tensors reads per second: how close decode attention is to the machine's streaming bandwidth.
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
    args = p.parse_args()
    n, kv_heads, rep, head_dim = args.episodes, 2, 2, 64
    torch.manual_seed(0)
    q = torch.randn(n, kv_heads, rep, head_dim)
    print(f"{torch.get_num_threads()} threads; {n} sequences, fp32, {args.layers} layers cycled")
    print("positions  masked ms  unmasked ms  masked/unmasked  SDPA GB/s  sum GB/s  SDPA/sum")
    for positions in args.positions:
        shape = (n, kv_heads, positions, head_dim)
        layers = [(torch.randn(shape), torch.randn(shape)) for _ in range(args.layers)]
        mask = torch.zeros(n, 1, rep, positions)
        mask[..., positions - 5 :] = float("-inf")  # a padded last block
        masked = per_layer_s(
            lambda k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), layers,
            args.repeats,
        )
        unmasked = per_layer_s(
            lambda k, v: F.scaled_dot_product_attention(q, k, v), layers, args.repeats
        )
        read = per_layer_s(lambda k, v: (k.sum(), v.sum()), layers, args.repeats)
        nbytes = 2 * layers[0][0].numel() * layers[0][0].element_size()
        print(
            f"{positions:9d}  {masked * 1e3:9.2f}  {unmasked * 1e3:11.2f}  {masked / unmasked:15.2f}"
            f"  {nbytes / unmasked / 1e9:9.1f}  {nbytes / read / 1e9:8.1f}  {read / unmasked:8.2f}"
        )


if __name__ == "__main__":
    main()
