"""What the sandbox's defences cost: reset and step latency of the real terminal, side by side.

Arms, each in its own process, run in alternation (ABCABC...) so a busy machine loads them alike:

* ``this``: this checkout, as it runs by default (an ext4 file system per episode root where
  the caller is root, our own pid 1, the prompt checks);
* ``this-unbounded-disk``: this checkout with ``Limits(disk_bytes=0)`` and
  ``AGENTWORLD_TERMINAL_UNBOUNDED=disk``, the root on the host's file system: the difference
  to ``this`` is the cost of the per-episode file system alone;
* ``baseline``: another checkout's sources (``--baseline DIR``, e.g. a ``git worktree`` of the
  commit before the change), run with this checkout's interpreter.

Each arm runs ``--episodes`` episodes of ``--steps`` steps (``echo``, ``ls -la``, ``cd``,
``cat``); it reports the median of reset + close (ms) and of one step (ms). Usage::

    uv run python bench/sandbox_cost.py --baseline ../wt-base --rounds 3

The arms run as the caller. As an ordinary user each reset also mounts the identity files'
tmpfs in the episode disk's holder namespace (one ``nsenter`` + ``mount``, so the sandbox's
mount table names no host path): 9.4 ms median, 4.8 ms best, of 20 as uid 1000 on the shared
2-core development machine (``NamespaceTmpfs.mount_tmpfs``, issue 43); root's reset is
unchanged by it (its identity tmpfs was already there).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ARM = r"""
import json, sys, time
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.limits import Limits
episodes, steps = int(sys.argv[1]), int(sys.argv[2])
commands = ["echo hi", "ls -la", "mkdir -p d && cd d", "cat /etc/hostname", "cd ~"]
limits = Limits(disk_bytes=0) if sys.argv[4] == "host" else Limits()
env = TerminalEnv(limits=limits, sandbox=sys.argv[3] or None)
env.reset(); env.close()  # warm: imports, sandbox detection
resets, step_ms = [], []
for _ in range(episodes):
    t0 = time.perf_counter()
    env.reset()
    t1 = time.perf_counter()
    for k in range(steps):
        s0 = time.perf_counter()
        env.step(commands[k % len(commands)])
        step_ms.append(1e3 * (time.perf_counter() - s0))
    t2 = time.perf_counter()
    env.close()
    resets.append(1e3 * ((t1 - t0) + (time.perf_counter() - t2)))
print(json.dumps({"reset_ms": resets, "step_ms": step_ms}))
"""


def _sources(checkout: Path) -> list[str]:
    return [str(p) for p in sorted(checkout.glob("packages/**/src")) if p.is_dir()]


def run_arm(arm: str, args: argparse.Namespace) -> dict[str, list[float]]:
    env = dict(os.environ)
    disk = "host" if arm == "this-unbounded-disk" else "own"
    if arm == "this-unbounded-disk":
        env["AGENTWORLD_TERMINAL_UNBOUNDED"] = "disk"
    if arm == "baseline":
        env["PYTHONPATH"] = os.pathsep.join(_sources(Path(args.baseline)))
    done = subprocess.run(
        [sys.executable, "-c", ARM, str(args.episodes), str(args.steps), args.sandbox, disk],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", help="checkout of the code to compare against")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sandbox", default="", help="bubblewrap or unshare (default: detect)")
    args = parser.parse_args()
    arms = ["this", "this-unbounded-disk"] + (["baseline"] if args.baseline else [])
    results: dict[str, dict[str, list[float]]] = {a: {"reset_ms": [], "step_ms": []} for a in arms}
    for _ in range(args.rounds):
        for arm in arms:
            for key, values in run_arm(arm, args).items():
                results[arm][key] += values
    medians = {a: {k: statistics.median(v) for k, v in r.items()} for a, r in results.items()}
    ref = medians.get("baseline", medians["this-unbounded-disk"])
    print(f"{'arm':<22}{'reset+close ms':>16}{'step ms':>10}{'reset x':>10}{'step x':>9}")
    for arm, m in medians.items():
        print(
            f"{arm:<22}{m['reset_ms']:>16.1f}{m['step_ms']:>10.2f}"
            f"{m['reset_ms'] / ref['reset_ms']:>10.2f}{m['step_ms'] / ref['step_ms']:>9.2f}"
        )
    print(f"(ratios against {'baseline' if args.baseline else 'this-unbounded-disk'}; "
          f"{args.rounds} rounds x {args.episodes} episodes x {args.steps} steps per arm)")


if __name__ == "__main__":
    main()
