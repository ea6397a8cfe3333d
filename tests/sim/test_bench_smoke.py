"""Smoke test of the throughput benchmark (bench/sim_throughput.py) on a minuscule workload."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "sim_throughput.py"
TINY = [
    "--episodes", "3", "--steps", "6", "--system-tokens", "40", "--initial-obs-tokens", "12",
    "--action-tokens", "5", "--obs-tokens", "7", "--vocab", "300", "--hidden", "64",
    "--layers", "2", "--intermediate", "128", "--block-size", "8", "--max-batched-tokens", "64",
    "--matmul-size", "256", "--sample-steps", "3", "--threads", "1",
]  # fmt: skip


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("sim_throughput", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_prompt_of_next_step_extends_history(bench) -> None:
    work = bench.Workload(num_episodes=2, num_steps=3, system_tokens=10, initial_obs_tokens=4,
                          action_tokens=3, obs_tokens=2, vocab_size=50)  # fmt: skip
    obs = [[1, 2], [3, 4]]
    first, second, third = (work.prompt(1, obs[:n]) for n in range(3))
    assert second[: len(first)] == first
    assert second[len(first) : len(first) + 2] == obs[0]
    assert third[: len(second) + 2] == second + obs[1]
    assert [len(first), len(second), len(third)] == [work.prompt_len(s) for s in range(3)]
    assert work.max_len == len(third) + 2
    # the system prompt is shared, the initial observations are not
    a, b = work.prefixes
    assert a[:13] == b[:13] and a[13:17] != b[13:17]
    assert max(first) < 50 and min(first) >= 0


def test_workload_flops_matches_counted_forward(bench) -> None:
    """The analytic FLOPs of one episode equal torch's FLOP counter on one forward of its
    whole history, after removing what that forward does differently (logits for every token,
    full square attention)."""
    from torch.utils.flop_counter import FlopCounterMode

    b = bench.make_bench(bench.parse_args(TINY + ["--episodes", "1", "--steps", "1"]))
    model, work = b.base_model, b.work
    n = work.max_len - 1
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(input_ids=torch.zeros(1, n, dtype=torch.long))
    counted = counter.get_total_flops()
    c = model.config
    attn_dim = c.num_attention_heads * c.head_dim
    full_square = 4 * c.num_hidden_layers * attn_dim * n * n
    causal = 4 * c.num_hidden_layers * attn_dim * n * (n + 1) / 2
    head_all, head_sampled = (
        2 * c.hidden_size * c.vocab_size * n,
        2 * c.hidden_size * c.vocab_size * 7,
    )
    expected = counted - full_square + causal - head_all + head_sampled
    assert bench.workload_flops(model, work) == pytest.approx(expected, rel=1e-9)


def test_b4_priming_recreates_the_cache_of_earlier_steps(bench) -> None:
    """B4 timed on sampled steps after priming finds exactly the prefix hits (and generates the
    tokens) that stepping through every step gave it. With 4-token pages the history before
    step 6 ends a page on the last observation token fed back, the page a finishing request
    leaves unhashed."""
    b = bench.make_bench(bench.parse_args(TINY + ["--block-size", "4"]))
    full = bench.run_arm(b, "B4")  # the first arm: every step, on its own histories
    assert not full.estimated and sorted(full.cached) == list(range(6))
    b.reference, b.reference_arm = full.observations, "B4"
    sampled = bench.run_arm(b, "B4")
    assert sampled.estimated and sorted(sampled.cached) == [0, 2, 5]
    assert sampled.cached == {s: full.cached[s] for s in (0, 2, 5)}
    assert sampled.queried == {s: full.queried[s] for s in (0, 2, 5)}
    assert sampled.cached[5] > sampled.cached[2] > sampled.cached[0] > 0
    assert all(sampled.observations[k] == full.observations[k] for k in sampled.observations)


def test_interpolate_is_piecewise_linear(bench) -> None:
    assert bench.interpolate({0: 1.0, 2: 3.0, 4: 3.0}, 5) == [1.0, 2.0, 3.0, 3.0, 3.0]


def test_benchmark_report_is_sane(bench, tmp_path: Path) -> None:
    threads = torch.get_num_threads()
    report = bench.main(TINY + ["--b0-episodes", "2", "--json", str(tmp_path / "report.json")])
    assert torch.get_num_threads() == threads  # --threads 1 does not leak into the caller
    arms = report["arms"]
    engine = bench.engine_available() is None
    assert set(arms) == ({"B0", "B1", "B2", "B3", "B4"} if engine else {"B0", "B1", "B4"})
    assert report["reference_arm"] == ("B3" if engine else "B4")
    assert (tmp_path / "report.json").stat().st_size > 0
    for name, a in arms.items():
        assert a["env_steps_per_s"] > 0
        assert a["output_tokens_per_s"] == pytest.approx(7 * a["env_steps_per_s"])
        assert 0.0 <= a["prefix_hit_rate"] <= 1.0 and 0.0 <= a["prefix_hit_rate_from_step5"] <= 1.0
        assert 0 < a["latency_p50_s"] <= a["latency_p99_s"]
        assert a["peak_rss_bytes"] > 10 * 2**20
        assert 0 < a["mfu"] < 1
        # greedy fp32: every arm generates the reference tokens on every observation it ran
        if name != report["reference_arm"]:
            assert a["same_tokens_as_reference"] == 1.0, name
            assert a["compared_observations"] > 0
    # recompute arms serve nothing from cache; B0 was timed on 2 of 3 episodes and 3 of 6 steps
    assert arms["B0"]["prefix_hit_rate"] == arms["B1"]["prefix_hit_rate"] == 0.0
    assert arms["B0"]["estimated"] and arms["B0"]["compared_observations"] == 2 * 3
    assert arms["B1"]["compared_observations"] == 3 * 3
    # transformers' continuous batching shares the system prompt's full pages between episodes
    assert arms["B4"]["prefix_hit_rate"] > 0
    if engine:
        b3 = arms["B3"]
        assert arms["B2"]["prefix_hit_rate"] == 0.0
        # a pinned episode prefills only turn template + action + last sampled token per step
        assert b3["prefix_hit_rate_from_step5"] > 0.85
        assert b3["prefix_hit_rate"] > arms["B4"]["prefix_hit_rate"]
        assert set(report["ratios"]) == {"B0", "B1", "B2", "B4"}
        single = report["single_episode"]
        assert len(single["latencies_s"]) == 6 and single["ratio_last_over_step2"] > 0
