"""Prefix hit rate and throughput of N world-model servers behind sglang-router (issue 35).

    uv run python bench/router.py                     # ~6 min on 2 CPU cores
    uv run python bench/router.py --model runs/quickstart/checkpoints/sft --replicas 2 4

Every arm starts its own ``agentworld serve-openai`` replicas (subprocesses on loopback, one
torch thread each, empty KV caches) and, except the single-server reference, SGLang's router
in front of them (:func:`agentworld.sim.server.router.routed`) with one policy. The workload
is the simulator's: ``--episodes`` closed-loop episodes stepped in lockstep through the
``openai`` backend (:class:`~agentworld.sim.backends.openai_client.OpenAIWorldModel`); each
step sends every episode's whole history (a system prompt shared by all episodes, the
episode's own task, then its actions and the model's own answers) at once. The hit rate is
the servers' own count, ``usage.prompt_tokens_details.cached_tokens`` over the prompt tokens;
"computed tok/req" the prompt tokens a replica had to run per request (the cost a router saves);
"busiest" the share of requests the busiest replica served (from its access log).

Without ``--model`` the replicas serve a random tiny Qwen3 (hidden 64, 2 layers) built from a
config: its answers are noise, but routing and prefix reuse do not depend on what a model
predicts, only on the prompts, and the prompts here grow as a simulator's do.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from agentworld.sim.backends.openai_client import OpenAIWorldModel
from agentworld.sim.server.router import free_port, is_healthy, routed

SYSTEM = (
    "You simulate a Linux terminal in a sandbox. Given the agent's command, predict exactly "
    "what the terminal prints next, the prompt line included. Files persist between commands. "
) * 4
WORDS = "alpha beta gamma delta notes logs data src build tmp report config backup".split()
COMMANDS = [
    "ls -la", "cat notes.md", "grep -n error logs/app.log", "wc -l data/*.csv", "pwd",
    "find . -name '*.py' | head", "echo done > status.txt", "du -sh src", "sort data/a.csv",
]  # fmt: skip


def tiny_checkpoint(path: Path) -> Path:
    """A random tiny Qwen3 and a ChatML byte-level BPE tokenizer saved to ``path``."""
    sys.path.insert(0, str(Path(__file__).parent))
    import torch
    from session_overhead import build_tokenizer  # the same tokenizer, trained on terminal text
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = build_tokenizer()
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    Qwen3ForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@contextmanager
def replicas(model: Path, n: int, logs: Path) -> Iterator[list[str]]:
    """``n`` ``agentworld serve-openai`` subprocesses of ``model``; yields their root URLs."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs, urls = [], []
    try:
        for i in range(n):
            port = free_port("127.0.0.1")
            command = [sys.executable, "-c", "from agentworld.app.cli import main; main()",
                       "serve-openai", "--model", str(model), "--port", str(port), "--device", "cpu",
                       "--served-model-name", "wm", "--max-wait-ms", "5"]  # fmt: skip
            log = (logs / f"replica{i}.log").open("wb")
            procs.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env))
            urls.append(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 300
        for proc, url in zip(procs, urls, strict=True):
            while not is_healthy(f"{url}/health"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"replica {url} did not start; see {logs}")
                time.sleep(0.2)
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


def run_workload(base_url: str, episodes: int, turns: int, max_tokens: int, seed: int) -> dict:
    """Step ``episodes`` closed-loop episodes ``turns`` times; hit rate and throughput."""
    rng = random.Random(seed)
    client = OpenAIWorldModel(
        "wm", base_url=base_url, max_tokens=max_tokens, max_concurrency=episodes,
        stop_at_observation=False, timeout=600,
    )  # fmt: skip
    histories = [
        [{"role": "system", "content": SYSTEM + "Task: " + " ".join(rng.choices(WORDS, k=12))}]
        for _ in range(episodes)
    ]
    start = time.perf_counter()
    for _ in range(turns):
        for history in histories:
            history.append({"role": "user", "content": rng.choice(COMMANDS)})
        for history, prediction in zip(histories, client.predict(histories), strict=True):
            history.append({"role": "assistant", "content": prediction.text})
    seconds = time.perf_counter() - start
    client.close()
    return {
        "hit_rate": client.prefix_hit_rate,
        "requests_per_s": episodes * turns / seconds,
        "computed_tokens_per_request": (client.num_prompt_tokens - client.num_cached_tokens)
        / (episodes * turns),
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, help="checkpoint to serve (default: tiny random)")
    parser.add_argument("--replicas", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=24, help="answer length (tokens)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--balance-abs-threshold", type=int, default=2,
                        help="the cache_aware+balance arm's (sglang-router's default: 64)")
    parser.add_argument("--balance-rel-threshold", type=float, default=1.2,
                        help="the cache_aware+balance arm's (sglang-router's default: 1.5)")
    args = parser.parse_args()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="router-bench-")))
        model = args.model or tiny_checkpoint(tmp / "tiny")
        policies = ("random", "round_robin", "cache_aware", "cache_aware+balance")
        arms = [(1, None)] + [(n, p) for n in args.replicas for p in policies]
        print(f"{args.episodes} episodes x {args.turns} turns, answers of {args.max_tokens} "
              f"tokens; load {os.getloadavg()[0]:.1f}")  # fmt: skip
        print(f"{'servers':>7} {'routing':<20} {'hit rate':>8} {'req/s':>7} "
              f"{'computed tok/req':>16} {'busiest':>7} {'seconds':>8}")  # fmt: skip
        rows = {}
        for n, policy in arms:
            logs = tmp / f"{n}-{policy}"
            logs.mkdir()
            with replicas(model, n, logs) as urls, ExitStack() as arm:
                balance = {}
                if policy == "cache_aware+balance":
                    balance = dict(balance_abs_threshold=args.balance_abs_threshold,
                                   balance_rel_threshold=args.balance_rel_threshold)
                url = f"{urls[0]}/v1" if policy is None else arm.enter_context(
                    routed(urls, policy=policy.split("+")[0], log=tmp / f"router-{n}-{policy}.log",
                           **balance))  # fmt: skip
                row = run_workload(url, args.episodes, args.turns, args.max_tokens, args.seed)
            served = [log.read_text().count("POST /v1/chat/completions") for log in
                      sorted(logs.glob("replica*.log"))]  # fmt: skip
            row["busiest_share"] = max(served) / max(sum(served), 1)
            rows[n, policy] = row
            print(f"{n:>7} {policy or 'direct':<20} {row['hit_rate']:>8.3f} "
                  f"{row['requests_per_s']:>7.2f} {row['computed_tokens_per_request']:>16.1f} "
                  f"{row['busiest_share']:>7.2f} {row['seconds']:>8.1f}", flush=True)  # fmt: skip
        for n in args.replicas:
            rr = rows[n, "round_robin"]
            for policy in policies[2:]:
                ca = rows[n, policy]
                print(f"{n} servers, {policy} / round_robin: prompt tokens computed x"
                      f"{ca['computed_tokens_per_request'] / rr['computed_tokens_per_request']:.2f},"
                      f" throughput x{ca['requests_per_s'] / rr['requests_per_s']:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
