"""Warm start: is a world-model checkpoint a better starting point for an agent policy? (issue 5)

Collects real terminal episodes (scripted expert and random policy), trains a world model on
the training split through the normal ``cpt -> sft`` stages (or takes ``--world-model DIR``),
then behaviour-clones a policy (``policy_sft``: system = agent prompt + task, user =
observation, assistant = action) on the training split's expert episodes, twice, with the
same data, optimizer steps and seed:

* ``world model``: starting from the world-model checkpoint;
* ``random init``: the same architecture and tokenizer, randomly initialised.

Each policy is measured on held-out tasks: action accuracy (greedy next action exactly equal
to the expert's, over held-out expert transitions) and task success on the real terminal
(greedy rollouts of at most ``--max-steps`` steps; success is the environment's task check,
``info["success"]``), with 95% Wilson intervals, plus wall time. Generation goes through the
sim runtime's :class:`~agentworld.sim.engine.PagedEngine` (rollout episodes keep their KV
pinned between steps).

    uv run python bench/warmstart.py --quick            # about a minute: a smoke run
    uv run python bench/warmstart.py --json runs/warmstart.json   # sized for ~20 min, 2 idle cores
    uv run python bench/warmstart.py --world-model runs/quickstart/sft --seed 1

With ``--world-model``, pass a ``--seed`` other than the one that collected the world
model's episodes, so the held-out tasks are new to it.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from agentworld.core import plugins
from agentworld.core.collect import collect, split
from agentworld.core.types import Action, Episode, Observation, Task
from agentworld.sim.engine import PagedEngine
from agentworld.sim.prompts import fit_prompt
from agentworld.sim.sampling import SamplingParams
from agentworld.trainers.training.base import corpus_texts
from agentworld.trainers.models.specs import load_model
from agentworld.trainers.agents.policy_data import clean_action, history_messages, policy_pair
from agentworld.trainers.agents.policy_sft import PolicySftTrainer
from agentworld.trainers.models.tokenizer import train_tokenizer

Z95 = 1.959963984540054  # standard normal quantile of 0.975
STOP_TOKENS = ("<|im_end|>", "<|endoftext|>")


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``k / n`` (95% for the default ``z``).

    Source: E. B. Wilson (1927), "Probable inference, the law of succession, and statistical
    inference", JASA 22(158); recommended over the normal approximation for small ``n`` or
    proportions near 0 or 1 by Brown, Cai & DasGupta (2001), Statistical Science 16(2).

    Raises:
        ValueError: ``n < 1`` or ``k`` outside ``[0, n]``.
    """
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low = 0.0 if k == 0 else max(0.0, centre - half)
    return low, 1.0 if k == n else min(1.0, centre + half)


class EnginePolicy:
    """A causal-LM policy answering many chats at once through a :class:`PagedEngine`.

    Args:
        model: The policy model (fp32, eval mode is set here).
        tokenizer: Its tokenizer, with a ChatML chat template.
        max_new_tokens: Longest action generated (tokens).
        kv_cache_bytes: KV pool of the engine (bytes).
    """

    def __init__(self, model: Any, tokenizer: Any, max_new_tokens: int, kv_cache_bytes: int):
        self.tokenizer = tokenizer
        vocab = tokenizer.get_vocab()
        stop = {vocab[t] for t in STOP_TOKENS if t in vocab}
        if tokenizer.eos_token_id is not None:
            stop.add(tokenizer.eos_token_id)
        self.stop_ids = frozenset(stop)
        self.engine = PagedEngine(
            model.eval(),
            stop_token_ids=self.stop_ids,
            decode=tokenizer.decode,
            kv_cache_bytes=kv_cache_bytes,
            max_num_batched_tokens=1024,
        )
        self.params = SamplingParams(max_new_tokens)  # greedy
        context = self.engine.max_positions
        self.budget = None if context is None else context - max_new_tokens

    def _render(self, messages: Sequence[dict[str, str]]) -> list[int]:
        out = self.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True)
        return list(out["input_ids"])

    def act(
        self, chats: Sequence[list[dict[str, str]]], episode_ids: Sequence[str] | None = None
    ) -> list[str]:
        """Greedy actions ``[batch]`` for ``[batch]`` chats ``[system, (user, assistant) * T, user]``.

        Args:
            episode_ids: ``[batch]`` rollout ids: each chat continues its episode's pinned KV.
        """
        prompts = [
            fit_prompt(c, self._render, self.budget).ids if self.budget else self._render(c)
            for c in chats
        ]
        outputs = self.engine.generate(prompts, self.params, episode_ids=episode_ids)
        actions = []
        for out in outputs:
            ids = (
                out.token_ids[:-1]
                if out.token_ids[-1:] and out.token_ids[-1] in self.stop_ids
                else out.token_ids
            )
            actions.append(clean_action(self.tokenizer.decode(ids, skip_special_tokens=True)))
        return actions


def action_accuracy(
    policy: EnginePolicy, experts: Sequence[Episode], limit: int
) -> tuple[int, int]:
    """``(exact matches, transitions)`` of greedy next actions over the first ``limit``
    expert transitions (episode order, then turn order)."""
    pairs = [policy_pair(e, t) for e in experts for t in range(len(e.steps))][:limit]
    got = []
    for i in range(0, len(pairs), 64):
        got += policy.act([messages for messages, _ in pairs[i : i + 64]])
    return sum(g == want.strip() for g, (_, want) in zip(got, pairs)), len(pairs)


def rollouts(
    policy: EnginePolicy, domain: Any, tasks: Sequence[Task], max_steps: int, concurrency: int
) -> list[bool]:
    """Task success of greedy rollouts in the real environment, ``concurrency`` at a time.

    Each rollout resets a real env to its task, then for up to ``max_steps`` steps asks the
    policy for an action (all active rollouts in one engine batch, KV pinned per rollout) and
    runs it; it ends at the env's ``terminated``/``truncated``. Success is ``info["success"]``.
    """
    success: list[bool] = []
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for c in range(0, len(tasks), concurrency):
            chunk = tasks[c : c + concurrency]
            envs = [domain.make_env() for _ in chunk]
            ids = [f"rollout-{c + i}" for i in range(len(chunk))]
            try:
                first = pool.map(lambda e, t: e.reset(seed=0, options={"task": t})[0], envs, chunk)
                history: list[list[Observation | Action]] = [[obs] for obs in first]
                done, ok = [False] * len(chunk), [False] * len(chunk)
                for _ in range(max_steps):
                    live = [i for i in range(len(chunk)) if not done[i]]
                    if not live:
                        break
                    chats = [history_messages(chunk[i], history[i]) for i in live]
                    texts = policy.act(chats, [ids[i] for i in live])
                    steps = pool.map(
                        lambda env, a: env.step(Action(text=a)), [envs[i] for i in live], texts
                    )
                    for i, text, (obs, _, term, trunc, info) in zip(live, texts, steps):
                        history[i] += [Action(text=text), obs]
                        ok[i] = ok[i] or bool(info.get("success"))
                        done[i] = bool(term or trunc)
                success += ok
            finally:
                for env in envs:
                    env.close()
                for episode_id in ids:
                    if episode_id in policy.engine.episodes:
                        policy.engine.close(episode_id)
    return success


def train_world_model(train: list[Episode], out: Path, a: argparse.Namespace) -> tuple[str, float]:
    """Tokenizer + ``cpt`` + ``sft`` world model on ``train``; ``(checkpoint dir, seconds)``."""
    t0 = time.perf_counter()
    train_tokenizer(corpus_texts(train), a.vocab_size, out / "tokenizer")
    common = {"seed": a.seed, "num_threads": a.threads, "log_every": 50}
    cpt = plugins.get_trainer("cpt").train(train, {
        "output_dir": str(out / "cpt"), "model": a.preset, "tokenizer": str(out / "tokenizer"),
        "time_budget_s": a.cpt_seconds, **common, **a.steps_cap})  # fmt: skip
    sft = plugins.get_trainer("sft").train(train, {
        "output_dir": str(out / "sft"), "model": cpt, "time_budget_s": a.sft_seconds,
        **common, **a.steps_cap})  # fmt: skip
    return sft, time.perf_counter() - t0


def random_init(world_model: str, out: Path, seed: int) -> str:
    """Save the world model's architecture and tokenizer with fresh random weights (seeded)."""
    config = AutoConfig.from_pretrained(world_model)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(world_model).save_pretrained(out)
    return str(out)


def run_arm(
    name: str, start: str, experts: list[Episode], held: list[Episode], tasks: list[Task],
    domain: Any, out: Path, a: argparse.Namespace,
) -> dict[str, Any]:  # fmt: skip
    """Behaviour-clone from ``start``, then measure action accuracy and real task success."""
    t0 = time.perf_counter()
    path = PolicySftTrainer().train(experts, {
        "output_dir": str(out), "model": start, "max_steps": a.policy_steps, "seed": a.seed,
        "batch_size": a.batch_size, "lr": a.lr, "warmup_steps": min(20, a.policy_steps // 10),
        "num_threads": a.threads, "log_every": 50})  # fmt: skip
    train_s = time.perf_counter() - t0
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    model, tokenizer = load_model(path)
    policy = EnginePolicy(model, tokenizer, a.max_new_tokens, a.kv_cache_mib << 20)
    t1 = time.perf_counter()
    hits, n = action_accuracy(policy, held, a.max_transitions)
    wins = rollouts(policy, domain, tasks, a.max_steps, a.concurrency)
    eval_s = time.perf_counter() - t1
    row = {
        "arm": name, "start": start, "checkpoint": path, "optimizer_steps": log[-1]["step"],
        "final_loss": log[-1]["loss"], "action_accuracy": hits / n,
        "action_accuracy_ci95": wilson(hits, n), "transitions": n,
        "success_rate": sum(wins) / len(wins), "success_ci95": wilson(sum(wins), len(wins)),
        "tasks": len(wins), "train_s": round(train_s, 1), "eval_s": round(eval_s, 1),
        "prefix_hit_rate": round(policy.engine.stats.prefix_hit_rate, 3),
        "engine_errors": policy.engine.stats.num_errors,
    }  # fmt: skip
    print(f"  {name}: {json.dumps(row)}", flush=True)
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of the arms."""

    def ci(p: float, lo_hi: Sequence[float]) -> str:
        return f"{p:.3f} [{lo_hi[0]:.3f}, {lo_hi[1]:.3f}]"

    lines = [
        "| start | action accuracy (95% CI) | task success (95% CI) | steps | final loss | train s "
        + "| eval s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['arm']} | {ci(r['action_accuracy'], r['action_accuracy_ci95'])} "
            f"(n={r['transitions']}) | {ci(r['success_rate'], r['success_ci95'])} "
            f"(n={r['tasks']}) | {r['optimizer_steps']} | {r['final_loss']:.3f} "
            f"| {r['train_s']:.0f} | {r['eval_s']:.0f} |"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="smoke run: tiny model and budgets")
    p.add_argument("--world-model", help="world-model checkpoint dir (skips training one)")
    p.add_argument("--episodes", type=int, default=1600, help="real episodes collected")
    p.add_argument(
        "--expert-fraction",
        type=float,
        default=0.5,
        help="share of scripted-expert episodes (the rest: random policy)",
    )
    p.add_argument("--heldout-fraction", type=float, default=0.2)
    p.add_argument("--preset", default="default", help="world-model preset (trainers.models)")
    p.add_argument("--vocab-size", type=int, default=3072)
    p.add_argument("--cpt-seconds", type=float, default=120.0)
    p.add_argument("--sft-seconds", type=float, default=360.0)
    p.add_argument("--policy-steps", type=int, default=600, help="optimizer steps per arm")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--max-transitions", type=int, default=400, help="held-out actions scored")
    p.add_argument("--tasks", type=int, default=120, help="held-out tasks rolled out")
    p.add_argument("--max-steps", type=int, default=8, help="steps per rollout")
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--concurrency", type=int, default=24, help="real envs stepped at once")
    p.add_argument("--kv-cache-mib", type=int, default=256)
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/bench_warmstart")
    p.add_argument("--json", help="write the results here as JSON")
    a = p.parse_args(argv)
    a.steps_cap = {}
    if a.quick:
        a.episodes, a.preset, a.vocab_size = 40, "tiny-test", 400
        a.policy_steps, a.max_transitions, a.tasks, a.max_steps = 4, 12, 4, 2
        a.max_new_tokens, a.kv_cache_mib = 16, 16
        a.steps_cap = {"max_steps": 4}
    return a


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the bench; returns (and with ``--json`` writes) the results."""
    a = parse_args(argv)
    torch.set_num_threads(a.threads)
    out = Path(a.out)
    domain = plugins.get_domain("terminal")
    t0 = time.perf_counter()
    mix = {"scripted": a.expert_fraction, "random": 1 - a.expert_fraction}
    episodes = collect(domain, a.episodes, policies=mix, seed=a.seed, max_steps=12)
    train, held = split(episodes, a.heldout_fraction, a.seed)
    experts = [e for e in train if e.metadata["policy"] == "scripted"]
    held_experts = [e for e in held if e.metadata["policy"] == "scripted"]
    tasks = [e.task for e in held if e.task is not None][: a.tasks]
    collect_s = time.perf_counter() - t0
    print(f"collected {len(episodes)} episodes in {collect_s:.0f} s: {len(train)} train "
          f"({len(experts)} expert), {len(held)} held-out ({len(held_experts)} expert)", flush=True)  # fmt: skip
    if a.world_model:
        wm, wm_s = a.world_model, 0.0
    else:
        wm, wm_s = train_world_model(train, out / "world_model", a)
        print(f"world model -> {wm} ({wm_s:.0f} s)", flush=True)
    fresh = random_init(wm, out / "random_init", a.seed)
    rows = [
        run_arm("world model", wm, experts, held_experts, tasks, domain, out / "policy_wm", a),
        run_arm("random init", fresh, experts, held_experts, tasks, domain, out / "policy_rand", a),
    ]
    result = {
        "rows": rows,
        "world_model": wm,
        "world_model_train_s": round(wm_s, 1),
        "collect_s": round(collect_s, 1),
        "episodes": {
            "train": len(train),
            "train_expert": len(experts),
            "heldout": len(held),
            "heldout_expert": len(held_experts),
        },
        "total_s": round(time.perf_counter() - t0, 1),
        "args": {k: v for k, v in vars(a).items() if k != "steps_cap"},
    }
    print(table(rows))
    print(f"total {result['total_s']:.0f} s (collect {collect_s:.0f} s, world model {wm_s:.0f} s)")
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
