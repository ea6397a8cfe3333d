"""Real environment against simulator, per domain: the seed's argument for a world model.

    uv run python bench/domain_speed.py                       # terminal, mcp, search, swe, tty, web
    uv run python bench/domain_speed.py --domains mcp --episodes 20
    uv run python bench/domain_speed.py --real-only --json real.json   # the real side alone

``--json`` writes every row, the real figures with the domain's median token lengths included:
the GPU recipe (``examples/gpu/device_run.py``) carries such a file to a machine whose simulated
side is a GPU and whose sandboxes may not run, and times the simulated side there.

Real: each domain's ``scripted`` policy plays ``--episodes`` episodes in its real environment
(one process, one environment at a time); the table gives the median reset (start-up) time and
real steps/s over the steps alone. Simulated: ``bench/sim_throughput.py``'s B3 arm (our paged
engine, episodes pinned, prefix caching) on sim_throughput's default random-weight Qwen3
model (hidden 256, 6 layers, 8,192-token vocabulary), with the domain's own median action and observation lengths, at batch 1 and batch 64
(``--steps`` lockstep steps). Lengths are tokens of a 4,096-entry byte-level BPE
(``tokenizers``) trained on the collected episodes. The ratio sim/real is per environment
step; a real environment also runs its episodes in parallel only as far as the machine's
cores and its own start-up allow.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from agentworld.core import plugins
from agentworld.core.collect import run_episode

sys.path.insert(0, str(Path(__file__).parent))


def real(name: str, episodes: int, max_steps: int) -> dict[str, object]:
    domain = plugins.get_domain(name)
    tasks = domain.tasks().sample(episodes, seed=0)
    policy = domain.policies()["scripted"]
    env = domain.make_env()
    resets, step_s, steps, texts = [], 0.0, 0, []
    try:
        for i, task in enumerate(tasks):
            t0 = time.perf_counter()
            episode = run_episode(domain, env, task, policy, seed=i, max_steps=max_steps)
            total = time.perf_counter() - t0
            t1 = time.perf_counter()
            env.reset(seed=i, options={"task": task})  # the reset alone, timed on its own
            reset_s = time.perf_counter() - t1
            resets.append(reset_s)
            step_s += max(total - reset_s, 1e-9)
            steps += len(episode.steps)
            texts += [(s.action.text, s.observation.text) for s in episode.steps]
    finally:
        env.close()
    return {"reset_s": statistics.median(resets), "steps_per_s": steps / step_s,
            "steps": steps, "texts": texts}  # fmt: skip


def token_lengths(texts: list[tuple[str, str]]) -> tuple[int, int]:
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator([t for pair in texts for t in pair], vocab_size=4096,
                                  show_progress=False)  # fmt: skip
    actions = [len(tokenizer.encode(a).ids) for a, _ in texts]
    observations = [len(tokenizer.encode(o).ids) for _, o in texts]
    return max(1, int(statistics.median(actions))), max(1, int(statistics.median(observations)))


def simulated(batch: int, steps: int, action_tokens: int, obs_tokens: int,
              extra: tuple[str, ...] = ()) -> float:
    """B3's environment steps/s at ``batch`` episodes; ``extra``: more ``sim_throughput`` options
    (``--device cuda``, a model shape)."""
    import sim_throughput

    argv = ["--arms", "B3", "--episodes", str(batch), "--steps", str(steps),
            "--action-tokens", str(action_tokens), "--obs-tokens", str(obs_tokens),
            "--no-single-episode", *extra]  # fmt: skip
    with contextlib.redirect_stdout(io.StringIO()):
        report = sim_throughput.main(argv)
    return float(report["arms"]["B3"]["env_steps_per_s"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--domains", default="terminal,mcp,search,swe,tty,web")
    parser.add_argument("--episodes", type=int, default=12)
    parser.add_argument("--max-steps", type=int, default=12)
    parser.add_argument("--steps", type=int, default=8, help="simulated lockstep steps")
    parser.add_argument("--real-only", action="store_true", help="skip the simulated arms")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    names = [n for n in args.domains.split(",") if n in plugins.names("domain")]
    head = (f"{'domain':<9}{'reset s':>9}{'real st/s':>11}{'act tok':>9}{'obs tok':>9}"
            f"{'sim b1 st/s':>13}{'sim b64 st/s':>14}{'b64/real':>10}")  # fmt: skip
    rows, records = [], {}
    for name in names:
        r = real(name, args.episodes, args.max_steps)
        action_tokens, obs_tokens = token_lengths(r["texts"])  # type: ignore[arg-type]
        records[name] = {"reset_s": r["reset_s"], "real_steps_per_s": r["steps_per_s"],
                         "real_steps": r["steps"], "action_tokens": action_tokens,
                         "obs_tokens": obs_tokens}  # fmt: skip
        print(f"{name}: {r['steps']} real steps", file=sys.stderr, flush=True)
        if args.real_only:
            continue
        b1 = simulated(1, args.steps, action_tokens, obs_tokens)
        b64 = simulated(64, args.steps, action_tokens, obs_tokens)
        records[name] |= {"sim_b1_steps_per_s": b1, "sim_b64_steps_per_s": b64}
        rows.append(f"{name:<9}{r['reset_s']:>9.3f}{r['steps_per_s']:>11.1f}{action_tokens:>9}"
                    f"{obs_tokens:>9}{b1:>13.1f}{b64:>14.1f}{b64 / r['steps_per_s']:>10.2f}")
    if args.json:
        args.json.write_text(json.dumps({"host": f"{platform.platform()}, {os.cpu_count()} CPU cores",
                                         "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                         "episodes": args.episodes, "domains": records}, indent=2))
    if rows:
        print(head)
        print("\n".join(rows))


if __name__ == "__main__":
    main()
