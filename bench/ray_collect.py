"""Collection throughput: in-process threads against Ray actors, 1 and 2 workers, side by side.

Arms (``collect(domain, N, workers=W, executor=E)`` on the real terminal, scripted and random
policies half and half, the same seed in every arm, so every arm collects the same episodes):
``threads-1``, ``threads-2``, ``ray-1``, ``ray-2``. One local Ray cluster (``ray.init`` with 2
CPUs on this machine) serves both Ray arms; its start-up is timed apart, and each Ray arm
includes starting its actors (one sandboxed terminal each). Rounds alternate the arms so a
busy host loads them alike. A last line measures the driver's own cost per episode on Ray:
the example echo domain, whose episodes take microseconds, with 2 workers.

Prints episodes per second per arm (median over rounds) and the ratio to ``threads-1``, for
the whole call and for the steady state after each worker's first episode.
Usage::

    uv run python bench/ray_collect.py --episodes 40 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

EXAMPLE_SRC = Path(__file__).parents[1] / "examples" / "agentworld-domain-echo" / "src"
ARMS = [("threads", 1), ("threads", 2), ("ray", 1), ("ray", 2)]
MIX = {"scripted": 1.0, "random": 1.0}


def timed_collect(domain, n: int, executor: str, workers: int, seed: int,
                  mix: dict) -> tuple[float, float]:
    """``(episodes/s of the whole call, episodes/s once every worker has finished its first
    episode)``: the first includes starting the workers (Ray: an actor process each, which
    imports agentworld and makes its environment), the second is the steady state."""
    from agentworld.core.collect import collect

    ends: list[float] = []
    start = time.perf_counter()
    episodes = collect(domain, n, policies=mix, seed=seed, workers=workers, executor=executor,
                       progress=lambda k: ends.extend([time.perf_counter()] * k))
    assert len(episodes) == n and len(ends) == n
    whole = n / (ends[-1] - start)
    steady = (n - workers) / (ends[-1] - ends[workers - 1])
    return whole, steady


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(EXAMPLE_SRC), *filter(None, [os.environ.get("PYTHONPATH")])])
    sys.path.insert(0, str(EXAMPLE_SRC))
    import ray
    from agentworld.core import plugins
    from agentworld_echo import EchoDomain

    terminal = plugins.get_domain("terminal")
    print(f"load before: {open('/proc/loadavg').read().split()[:3]}")
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             _node_ip_address="127.0.0.1")
    print(f"ray.init (local cluster, 2 CPUs): {time.perf_counter() - start:.1f} s")
    rates: dict[tuple[str, int], list[tuple[float, float]]] = {arm: [] for arm in ARMS}
    try:
        timed_collect(terminal, 4, "threads", 2, args.seed, MIX)  # warm: imports, sandbox check
        for r in range(args.rounds):
            for arm in ARMS if r % 2 == 0 else ARMS[::-1]:
                rates[arm].append(timed_collect(terminal, args.episodes, *arm, args.seed, MIX))
                whole, steady = rates[arm][-1]
                print(f"  round {r}: {arm[0]}-{arm[1]} {whole:.2f} eps/s, steady {steady:.2f}",
                      flush=True)
        echo = timed_collect(EchoDomain(), 200, "ray", 2, args.seed, {"random": 1.0})[1]
    finally:
        ray.shutdown()
    median = {arm: [statistics.median(r[k] for r in rates[arm]) for k in (0, 1)] for arm in ARMS}
    base = median[ARMS[0]]
    print(f"\nterminal, {args.episodes} episodes per arm, median of {args.rounds} rounds")
    print("| arm | episodes/s (with start-up) | x threads-1 | steady episodes/s | x threads-1 |")
    print("| --- | --- | --- | --- | --- |")
    for arm in ARMS:
        whole, steady = median[arm]
        print(f"| {arm[0]}-{arm[1]} | {whole:.2f} | {whole / base[0]:.2f} | {steady:.2f} | "
              f"{steady / base[1]:.2f} |")
    print(f"echo on ray-2, steady (driver + Ray cost per episode): {echo:.0f} eps/s, "
          f"{1e3 / echo:.1f} ms per episode")
    print(f"load after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
