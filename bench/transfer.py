"""Sim-to-real transfer on classic domains: train a world model on real episodes, train the
same Q-learning agent in the real env, only in the simulator, and in the simulator then
briefly in the real env, and evaluate every agent on the real env.

    uv run python bench/transfer.py                         # frozenlake-8x8 and taxi, ~45 min
    uv run python bench/transfer.py --domains frozenlake-8x8 --wm-minutes 4 --json out.json

Per domain, one run, side by side:

1. Real data: ``--wm-episodes`` episodes of the real env (policies random, epsilon-expert,
   expert, and mostly ``explore``, which covers every reachable state) through :func:`agentworld.core.collect.collect`; their transitions are the real
   budget spent on the world model (stated in the output). 90% train, 10% held out.
2. World model: the ``sft`` stage from the ``small`` preset (0.9M parameters, BPE tokenizer
   of 512 tokens trained on the data) for ``--wm-minutes``; its held-out fidelity (exact
   next observation, reward and termination accuracy) is printed.
3. Agents (the ``agent`` trainer, Q-learning): ``real`` (all episodes real), ``sim`` (all
   simulated, world model sampled at temperature 1, reward and termination from the model's
   footer), ``sim (verifier)`` (the same, reward and termination from the domain's verifier
   read off the simulated observation), ``sim+real`` (the sim agent continued
   for ``--finetune-episodes`` real episodes), ``real-small`` (that small real budget alone),
   and the random policy. The Q-table's state key is the observation's position line (and
   Taxi's passenger line), the same in every arm. Each is evaluated greedily on the real env over ``--eval-episodes``
   fixed-seed episodes with 95% intervals (Wilson for success, normal for the mean return).
4. WM2Real: ``--wm2real-episodes`` episodes generated in the simulator by the sim agent
   (epsilon 0.1) are replayed action for action in the real env from the same start; the
   share whose real outcome (success, return, length) matches the simulated one, and the
   share of steps whose simulated observation equals the real one before the first mismatch.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentworld.core import plugins
from agentworld.core.collect import collect, split
from agentworld.core.formats import parse_transition, sft_pair
from agentworld.core.io import read_episodes, write_episodes
from agentworld.core.types import Action, Episode

POLICY_MIX = {"random": 1.0, "epsilon-expert": 1.0, "expert": 1.0, "explore": 3.0}
# Per-domain Q-learning settings, enough to solve the real env (alpha 0.5, position key).
# Measured on the real frozenlake-8x8: 300 episodes -> success 0.0, 600 -> 1.0, and at 800 one
# of three runs never found the goal (epsilon-greedy finds FrozenLake's only reward by luck);
# optimistic initial values (initial_q 1) explore systematically but leave wall-bumping
# self-loops greedy (their value decays only by gamma per update), so 1500 plain episodes.
# Taxi: 1000 episodes -> success 0.85, 2000 -> 0.995 (1000 keeps the simulated arm short).
AGENT_SETTINGS: dict[str, dict[str, Any]] = {
    "frozenlake-8x8": {"episodes": 1500},
    "taxi": {"episodes": 1000},
}
ARMS = ("real", "sim", "sim (verifier)", "sim+real", "real-small")


def train_world_model(train: list[Episode], out: Path, minutes: float, seed: int) -> float:
    """SFT a ``small`` preset world model on ``train``; returns wall seconds."""
    t0 = time.monotonic()
    plugins.get_trainer("sft").train(
        train,
        {
            "model": "small",
            "output_dir": str(out),
            "tokenizer": "train",
            "vocab_size": 512,
            "time_budget_s": minutes * 60,
            "max_seq_len": 640,  # the longest windowed turn (Taxi) is ~460 tokens
            "batch_size": 16,
            "lr": 3e-3,
            "seed": seed,
            "progress": True,
        },
    )
    return time.monotonic() - t0


def world_model_fidelity(wm: Any, held: list[Episode], limit: int) -> dict[str, float]:
    """Greedy one-step predictions on held-out real transitions: exact observation, reward,
    termination, and all three at once; ``n`` transitions."""
    pairs = [(e, t) for e in held for t in range(len(e.steps))][:limit]
    prompts = [sft_pair(e, t)[0] for e, t in pairs]
    predictions = wm.predict(prompts)
    obs = rew = term = allok = 0
    for (episode, turn), prediction in zip(pairs, predictions, strict=True):
        step = episode.steps[turn]
        parsed = parse_transition(prediction.text, rewards=True)
        if parsed is None:
            continue
        o = parsed.observation == step.observation.text
        r = parsed.reward == step.reward
        d = parsed.terminated == step.terminated
        obs, rew, term, allok = obs + o, rew + r, term + d, allok + (o and r and d)
    n = len(pairs)
    return {
        "n": n,
        "observation_exact": obs / n,
        "reward_accuracy": rew / n,
        "termination_accuracy": term / n,
        "transition_exact": allok / n,
    }


def train_agent(out: Path, **options: Any) -> dict[str, Any]:
    """Run the ``agent`` trainer and return its ``metrics.json``."""
    path = plugins.get_trainer("agent").train([], {"output_dir": str(out), **options})
    return json.loads((Path(path) / "metrics.json").read_text())


def wm2real(wm: Any, domain: Any, agent_file: Path, n: int, seed: int, max_steps: int) -> dict:
    """Simulate ``n`` episodes with the sim agent (epsilon 0.1), replay each in the real env.

    Returns the matching shares (module docstring) and the simulated/real step rates.
    """
    from agentworld.sim import SimVectorEnv
    from agentworld.trainers.agents.qlearning import QLearningAgent

    agent = QLearningAgent.load(agent_file)
    rng = random.Random(seed)
    tasks = domain.tasks().sample(n, seed=seed)
    records: list[dict[str, Any]] = []
    sim_steps, sim_time = 0, 0.0
    width = 64
    for start in range(0, n, width):
        batch = tasks[start : start + width]
        env = SimVectorEnv(wm, len(batch), domain=domain, tasks=batch, max_steps=max_steps)
        observations, _ = env.reset(seed=seed + start)
        live = [True] * len(batch)
        trace = [
            {"task": t, "actions": [], "observations": [], "ret": 0.0, "done": None} for t in batch
        ]
        t0 = time.monotonic()
        while any(live):
            actions = []
            for i, o in enumerate(observations):
                explore = rng.random() < 0.1
                actions.append(rng.choice(agent.actions) if explore else agent.act(o, greedy=True))
            observations, rewards, terms, truncs, infos = env.step(actions)
            for i in range(len(batch)):
                if not live[i]:
                    continue
                sim_steps += 1
                trace[i]["actions"].append(actions[i])
                trace[i]["observations"].append(observations[i])
                trace[i]["ret"] += float(rewards[i])
                if terms[i] or truncs[i]:
                    live[i] = False
                    reason = infos.get("truncated_reason", [None] * len(batch))[i]
                    bad = reason in ("malformed", "error")
                    trace[i]["done"] = "terminated" if terms[i] else reason if bad else "truncated"
        sim_time += time.monotonic() - t0
        env.close()
        records += trace
    real_env = domain.make_env()
    same_outcome = matched_steps = total_steps = 0
    t0 = time.monotonic()
    real_steps = 0
    try:
        for k, rec in enumerate(records):
            real_env.reset(seed=seed + k, options={"task": rec["task"]})
            ret, ended, prefix_ok = 0.0, "truncated", True
            for action, sim_obs in zip(rec["actions"], rec["observations"], strict=True):
                observation, reward, terminated, truncated, _ = real_env.step(Action(text=action))
                real_steps += 1
                ret += float(reward)
                total_steps += 1
                prefix_ok = prefix_ok and observation.text == sim_obs
                matched_steps += prefix_ok
                if terminated or truncated:
                    ended = "terminated" if terminated else "truncated"
                    break
            sim_end = rec["done"] if rec["done"] in ("terminated", "truncated") else "malformed"
            same_outcome += ret == rec["ret"] and ended == sim_end
    finally:
        real_env.close()
    real_time = time.monotonic() - t0
    return {
        "episodes": len(records),
        "outcome_match": same_outcome / len(records),
        "step_match_before_first_divergence": matched_steps / max(1, total_steps),
        "malformed_episodes": sum(r["done"] not in ("terminated", "truncated") for r in records),
        "sim_steps_per_s": sim_steps / sim_time,
        "real_replay_steps_per_s": real_steps / max(real_time, 1e-9),
    }


def run_domain(name: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    domain = plugins.get_domain(name)
    out: dict[str, Any] = {"domain": name}
    t0 = time.monotonic()
    data, ckpt = root / name / "episodes.jsonl", root / name / "world_model"
    reuse = args.reuse and data.exists() and (ckpt / "model.safetensors").exists()
    if reuse:
        episodes = read_episodes(str(data))
    else:
        episodes = collect(
            domain, args.wm_episodes, policies=POLICY_MIX, seed=args.seed, max_steps=args.max_steps
        )
        write_episodes(str(data), episodes)
    train, held = split(episodes, 0.1, args.seed)
    out["wm_data"] = {
        "episodes": len(episodes),
        "real_transitions": sum(len(e.steps) for e in episodes),
        "train_transitions": sum(len(e.steps) for e in train),
        "collect_wall_s": time.monotonic() - t0,
    }
    out["wm_reused"] = reuse
    if reuse:
        log = (ckpt / "train_log.jsonl").read_text().splitlines()
        out["wm_train_wall_s"] = json.loads(log[-1])["elapsed_s"]
    else:
        out["wm_train_wall_s"] = train_world_model(train, ckpt, args.wm_minutes, args.seed)
    from agentworld.trainers.agents.envs import load_world_model

    greedy = load_world_model(ckpt, temperature=0.0, max_new_tokens=args.max_new_tokens)
    out["wm_fidelity"] = world_model_fidelity(greedy, held, args.fidelity_transitions)
    del greedy
    settings = dict(AGENT_SETTINGS.get(name, {"episodes": 2000}))
    n = args.agent_episodes or settings.pop("episodes")
    settings.pop("episodes", None)
    common = {
        **settings,
        "alpha": args.alpha,
        "max_steps": args.max_steps,
        "eval_episodes": args.eval_episodes,
        "seed": args.seed,
        "progress": True,
        "max_new_tokens": args.max_new_tokens,
        "num_envs": args.num_envs,
        # The tabular agent perceives its cell (and Taxi's passenger), not the drawing: the same
        # state key in the real env and in the simulator even where a map is drawn wrong.
        "key_lines": ["agent:", "taxi:", "passenger:"],
    }
    arms: dict[str, dict[str, Any]] = {}
    wanted = set(args.arms.split(","))
    unknown = wanted - set(ARMS)
    if unknown:
        raise SystemExit(f"unknown --arms {sorted(unknown)}; valid: {', '.join(ARMS)}")
    sim_agent = str(root / name / "sim" / "agent.json")
    if "real" in wanted:
        arms["real"] = train_agent(root / name / "real", env=f"real:{name}", episodes=n, **common)
    if wanted & {"sim", "sim+real"}:
        arms["sim"] = train_agent(root / name / "sim", env=f"sim:{ckpt}", episodes=n, **common)
    if "sim (verifier)" in wanted:
        arms["sim (verifier)"] = train_agent(
            root / name / "sim_verifier",
            env=f"sim:{ckpt}",
            episodes=n,
            reward_source="verifier",
            **common,
        )
    k = args.finetune_episodes
    if "sim+real" in wanted:
        arms["sim+real"] = train_agent(
            root / name / "sim_real",
            env=f"real:{name}",
            episodes=k,
            init_agent=sim_agent,
            epsilon_start=0.2,
            **common,
        )
    if "real-small" in wanted:
        arms["real-small"] = train_agent(
            root / name / "real_small", env=f"real:{name}", episodes=k, **common
        )
    out["arms"] = arms
    out["random"] = next(iter(arms.values()))["random_baseline"]
    out["wm2real"] = None
    if "sim" in arms:
        sampled = load_world_model(
            ckpt, temperature=1.0, seed=args.seed, max_new_tokens=args.max_new_tokens
        )
        out["wm2real"] = wm2real(
            sampled, domain, Path(sim_agent), args.wm2real_episodes, args.seed + 7, args.max_steps
        )
    return out


def _row(label: str, m: dict[str, Any], real: int, sim: int, wall: float) -> str:
    lo, hi = m["success_ci"]
    rlo, rhi = m["return_ci"]
    return (
        f"| {label} | {m['success_rate']:.3f} [{lo:.3f}, {hi:.3f}] | {m['mean_return']:.2f} "
        f"[{rlo:.2f}, {rhi:.2f}] | {real:,} | {sim:,} | {wall:.0f} |"
    )


def report(result: dict[str, Any]) -> str:
    d, f, w = result["wm_data"], result["wm_fidelity"], result["wm2real"]
    lines = [
        f"### {result['domain']}",
        "",
        f"World model: {d['real_transitions']:,} real transitions collected "
        f"({d['episodes']} episodes; {d['train_transitions']:,} for training), "
        f"trained {result['wm_train_wall_s']:.0f} s"
        f"{' (reused from an earlier run)' if result.get('wm_reused') else ''}. "
        f"Held-out one-step fidelity (n={f['n']}): "
        f"observation exact {f['observation_exact']:.3f}, reward {f['reward_accuracy']:.3f}, "
        f"termination {f['termination_accuracy']:.3f}, all three {f['transition_exact']:.3f}.",
        "",
        "| arm | real success (95% CI) | real mean return (95% CI) | real env steps | "
        "simulated steps | train wall s |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for label, m in result["arms"].items():
        lines.append(
            _row(
                label,
                m["eval"],
                m["real_steps"],
                m["sim_steps"],
                m["real_train_wall_s"] + m["sim_train_wall_s"],
            )
        )
    lines.append(_row("random policy", result["random"], 0, 0, 0))
    if w is None:
        return "\n".join(lines)
    sim = result["arms"]["sim"]
    lines += [
        "",
        f"Sim arm: {sim['parse_failures']} episodes ended on an unparsed answer. "
        f"WM2Real over {w['episodes']} simulated episodes: outcome match {w['outcome_match']:.3f}, "
        f"steps matching before the first divergence {w['step_match_before_first_divergence']:.3f} "
        f"({w['malformed_episodes']} ended malformed). Simulated {w['sim_steps_per_s']:.0f} "
        f"steps/s (64 episodes batched) vs real {w['real_replay_steps_per_s']:.0f} steps/s.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--domains", default="frozenlake-8x8,taxi")
    p.add_argument(
        "--wm-episodes", type=int, default=1500, help="real episodes for the world model"
    )
    p.add_argument("--wm-minutes", type=float, default=10.0, help="world-model training minutes")
    p.add_argument("--agent-episodes", type=int, default=0, help="0: per-domain default")
    p.add_argument("--finetune-episodes", type=int, default=100)
    p.add_argument("--eval-episodes", type=int, default=500)
    p.add_argument("--wm2real-episodes", type=int, default=256)
    p.add_argument("--fidelity-transitions", type=int, default=300)
    p.add_argument("--alpha", type=float, default=0.5)
    p.add_argument("--max-steps", type=int, default=100)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--num-envs", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--arms", default=",".join(ARMS), help="comma-separated subset of the arms")
    p.add_argument("--out-dir", default=None, help="keep checkpoints and agents here")
    p.add_argument(
        "--reuse",
        action="store_true",
        help="reuse the episodes and world model already in --out-dir (agents are retrained)",
    )
    p.add_argument("--json", default=None, help="write all results as JSON")
    args = p.parse_args(argv)
    root = Path(args.out_dir or tempfile.mkdtemp(prefix="agentworld-transfer-"))
    results = []
    for name in args.domains.split(","):
        t0 = time.monotonic()
        result = run_domain(name.strip(), args, root)
        result["wall_s"] = time.monotonic() - t0
        results.append(result)
        print(report(result), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
