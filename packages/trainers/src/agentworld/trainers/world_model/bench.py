"""Training throughput of a preset: ``python -m agentworld.trainers.world_model.bench [preset] [seq_len] [batch] [vocab]``.

Times fwd + bwd + AdamW steps on random tokens and prints tokens/s.
"""

from __future__ import annotations

import sys
import time

import torch

from agentworld.trainers.models.specs import build_config, num_parameters


def measure(
    preset: str = "default",
    seq_len: int = 512,
    batch_size: int = 8,
    vocab_size: int = 3072,
    steps: int = 6,
    warmup: int = 2,
) -> dict[str, float]:
    """Train-step throughput of ``preset`` on ``[batch_size, seq_len]`` random tokens.

    Returns:
        ``{"params", "tokens_per_s", "step_s"}`` (parameters, tokens per second, seconds per step).

    Raises:
        agentworld.trainers.models.specs.ModelSpecError: unknown preset.
    """
    from transformers import Qwen3ForCausalLM

    torch.manual_seed(0)
    config = build_config(preset, vocab_size)
    config._attn_implementation = "sdpa"
    model = Qwen3ForCausalLM(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, vocab_size, (batch_size, seq_len))
    for i in range(warmup + steps):
        if i == warmup:
            start = time.perf_counter()
        model(input_ids=ids, labels=ids, use_cache=False).loss.backward()
        opt.step()
        opt.zero_grad()
    step_s = (time.perf_counter() - start) / steps
    return {
        "params": num_parameters(model),
        "tokens_per_s": batch_size * seq_len / step_s,
        "step_s": step_s,
    }


if __name__ == "__main__":
    args = sys.argv[1:]
    preset = args[0] if args else "default"
    nums = [int(a) for a in args[1:4]]
    result = measure(preset, *nums)
    print(
        f"{preset}: {result['params'] / 1e6:.2f}M params, {result['tokens_per_s']:.0f} tokens/s, "
        f"{result['step_s']:.3f} s/step"
    )
