"""Decoupled RL end to end (issue 34): an LM agent trained with GRPO only inside a world model
of a real environment (the mcp notes server, or with ``--domain terminal`` the sandboxed
terminal), measured on the real environment's held-out tasks.

    uv run python bench/simrl.py --json runs/simrl/result.json   # ~10 min on 2 idle cores
    uv run python bench/simrl.py --domain terminal --json runs/simrl_terminal/result.json
    uv run python bench/simrl.py --quick                         # a smoke run, ~4 min (*)
    uv run python bench/simrl_report.py runs/simrl/result.json   # table + bench/simrl.png

(*) ``--quick`` checks that every stage runs, not what it learns: its budgets are too small for
any arm to succeed, so success rates of 0.000 everywhere are its expected result.

One run, side by side (bench/simrl_setup.py builds the first three):

1. Real episodes of the easy tasks (mcp: ``lookup`` and ``create`` on ``notes``, one or two
   tool calls; terminal: ``create``, ``delete``, ``inspect``, ``navigate``, one or two
   commands), scripted expert and random policy, reward footer on; 80% train, 20% held out.
2. A world model (``copy`` preset, tokenizer trained on the data, ``sft`` in optimizer steps;
   ``--cpt-steps`` adds a ``cpt`` stage before it). Its fidelity is checked first: the held-out real episodes' actions are
   stepped in the simulator; the share of simulated observations that parse, that equal the
   real ones, and each reward source's precision/recall of success against the recorded
   real outcome.
3. The agent: behaviour cloning of the training split's expert episodes (``policy_sft``)
   from the plain ``copy`` preset: the **no RL** arm and every RL arm's start. With
   ``--warm-start``, the same cloning from the world-model checkpoint too (warm start), and
   with ``--rl-from-warm-start`` that clone is the RL arms' start.
4. GRPO arms from that start, the same settings (``tasks_per_step`` x ``group_size`` episodes
   a step at ``--temperature``, greedy evaluation; ``--rl-tasks fresh`` trains on newly
   sampled tasks that no collected episode holds, instead of the training episodes' tasks): **sim** (reward: the world model's footer), **sim agree**
   (a mitigation: reward only when the footer and the transcript verifier both say
   success, an episode they disagree on ends unrewarded), **sim re-anchored** (a mitigation:
   every ``--reanchor-every`` steps and at the episode's end the actions so far run in the
   real environment and its observation and reward replace the simulated ones; the real
   steps it spends are counted), **real, same steps** and **real, same wall-clock** (as long
   as the sim arm trained). ``--judge`` adds the judge reward source (a chat model behind an
   OpenAI-compatible endpoint; ``world-model``: the world-model checkpoint served on
   loopback) to every measurement of the sources, not to training.
5. Every arm's checkpoints are evaluated greedily on the held-out tasks in the real
   environment (the plot: real success against agent training steps). The sim arms are also
   evaluated inside the simulator on the same tasks and every simulated episode is replayed
   in the real environment (the gap; simulated successes the replay refutes; precision and
   recall of each reward source), and steps/s of the rollouts in each environment.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
from simrl_setup import (  # noqa: E402
    COLLECT_STEPS,
    DOMAINS,
    Domain,
    SimFactory,
    clone_agent,
    held_tasks,
    judge_for,
    real_episodes,
    save_json,
    world_model,
)

from agentworld.trainers.agents.lm.trainer import train_lm_agent  # noqa: E402
from agentworld.trainers.agents.simrl.evaluate import gap_report, run_policy  # noqa: E402
from agentworld.trainers.agents.simrl.anchor import Anchoring  # noqa: E402
from agentworld.trainers.agents.simrl.replay import agreement  # noqa: E402
from agentworld.trainers.agents.simrl.rewards import SOURCES  # noqa: E402


SIM_ARMS = (("RL in sim", "footer"), ("RL in sim, transcript", "transcript"), ("RL in sim, agree", "agree"),
            ("RL in sim, re-anchored", "footer"))
ARMS = ("RL in sim", "RL in sim, agree", "RL in sim, re-anchored", "RL real, same steps", "RL real, same wall-clock")


def fidelity(wm: str, domain: Domain, held: list, a: argparse.Namespace, judge: Any) -> dict[str, Any]:
    """Step the held-out real episodes' actions in the simulator (source ``footer``): parse
    rate, exact observations, and each source's agreement with the recorded real success."""
    from concurrent.futures import ThreadPoolExecutor

    factory = SimFactory(wm, domain, "footer", max(a.max_turns, COLLECT_STEPS), judge=judge)
    exact, steps = [0], [0]

    def run(episode: Any) -> None:
        env = factory()
        env.reset(options={"task": episode.task})
        for step in episode.steps:
            obs, _, terminated, truncated, _ = env.step(step.action)
            steps[0] += 1
            exact[0] += obs == step.observation.text
            if terminated or truncated:
                break
        env.close()

    started = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(run, held))
    seconds = time.perf_counter() - started
    by_task = {e.task.id: e for e in held}
    sims = factory.episodes  # the truth: the recorded real outcome of the actions stepped
    true = [any(s.info.get("success") for s in by_task[e.task.id].steps[: len(e.actions)]) for e in sims]
    out = {
        "episodes": len(sims), "steps": steps[0],
        "parse_rate": 1 - sum(e.malformed for e in sims) / max(steps[0], 1),
        "exact": exact[0] / max(steps[0], 1), "real_success": sum(true) / max(len(true), 1),
        "steps_per_s": steps[0] / seconds,
        "sources": {s: agreement([e.success(s) for e in sims], true).as_dict()
                    for s in SOURCES if any(s in e.verdicts for e in sims)},
    }  # fmt: skip
    print(f"world-model fidelity on held-out real actions: {json.dumps(out)}", flush=True)
    return out


def grpo(name: str, start: str, factory: Any, tasks: list, out: Path, a: argparse.Namespace,
         marks: Sequence[int], budget_s: float | None = None) -> Iterator[dict[str, Any]]:  # fmt: skip
    """GRPO from ``start`` in ``factory``'s environments, evaluated on the real held-out tasks
    at each step of ``marks`` (training resumes between them). Yields one record per mark:
    ``steps``, ``train_s``, ``checkpoint`` and the rollout metrics so far."""
    records, metrics = [], []
    for i, mark in enumerate(marks):
        cfg = {
            "model": start, "output_dir": str(out), "steps": mark, "tasks_per_step": a.tasks_per_step,
            "group_size": a.group_size, "max_turns": a.max_turns, "max_action_tokens": a.max_action_tokens,
            "max_seq_len": 768, "temperature": a.temperature, "lr": a.rl_lr, "beta": 0.0, "seed": a.seed,
            "num_threads": a.threads, "env_workers": 8, "resume": i > 0, "overwrite": i == 0,
            "console": False, "callback": metrics.append,
        }  # fmt: skip
        if budget_s is not None:
            cfg["time_budget_s"] = budget_s
        started = time.perf_counter()
        train_lm_agent(factory, tasks, cfg)
        train_s = time.perf_counter() - started + (records[-1]["train_s"] if records else 0.0)
        last = metrics[-1] if metrics else {}
        rollout_s = sum(m["rollout_s"] for m in metrics)
        records.append({
            "steps": int(last.get("step", mark)), "train_s": round(train_s, 1),
            "env_steps": int(last.get("env_steps", 0)), "rollout_s": round(rollout_s, 2),
            "env_steps_per_s": last.get("env_steps", 0) / max(rollout_s, 1e-9),
            "train_success": [m["success_rate"] for m in metrics], "checkpoint": str(out),
        })  # fmt: skip
        print(f"  {name} -> step {records[-1]['steps']} ({train_s:.0f} s, "
              f"{records[-1]['env_steps_per_s']:.1f} env steps/s in rollouts)", flush=True)
        yield records[-1]


def evaluate(name: str, policy: str, domain: Domain, tasks: list, a: argparse.Namespace) -> float:
    """Greedy real success of ``policy`` on ``tasks``."""
    got = run_policy(policy, domain.make_env, tasks, max_turns=a.max_turns,
                     max_action_tokens=a.max_action_tokens, batch=a.eval_batch)  # fmt: skip
    rate = sum(got.success) / len(tasks)
    print(f"  {name}: real success {rate:.3f} ({sum(got.success)}/{len(tasks)}), "
          f"{got.steps_per_s:.1f} real env steps/s", flush=True)
    return rate


def sim_gap(policy: str, wm: str, domain: Domain, tasks: list, source: str, a: argparse.Namespace,
            judge: Any) -> dict[str, Any]:  # fmt: skip
    """Greedy episodes of ``policy`` in the simulator (never re-anchored: the gap of the
    policy), replayed in the real environment."""
    factory = SimFactory(wm, domain, source, a.max_turns, judge=judge)
    got = run_policy(policy, factory, tasks, max_turns=a.max_turns,
                     max_action_tokens=a.max_action_tokens, batch=a.eval_batch)  # fmt: skip
    report = gap_report(factory.episodes, domain.make_env)
    report["sim_steps_per_s"] = got.steps_per_s
    got_source = report["sources"][source]
    refuted = got_source["refuted"]  # None when the simulator saw no success
    refuted = "-" if refuted is None else f"{refuted:.3f}"
    print(f"    in the simulator ({source}): sim success {got_source['sim_success']:.3f}, "
          f"replayed real {report['real_success']:.3f}, refuted {refuted}, "
          f"parse rate {report['parse_rate']:.3f}", flush=True)  # fmt: skip
    return report


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="smoke run: budgets too small to learn; success rates of 0 are expected")
    p.add_argument("--domain", choices=sorted(DOMAINS), default="mcp", help="the real environment")
    p.add_argument("--world-model", help="world-model checkpoint (skips training one)")
    p.add_argument("--episodes", type=int, default=120, help="real episodes collected")
    p.add_argument("--expert-fraction", type=float, default=0.6)
    p.add_argument("--preset", default="copy")
    p.add_argument("--vocab-size", type=int, default=2048)
    p.add_argument("--cpt-steps", type=int, default=0, help="world-model cpt steps (0: none)")
    p.add_argument("--sft-steps", type=int, default=150, help="world-model sft steps")
    p.add_argument("--wm-batch", type=int, default=4)
    p.add_argument("--wm-lr", type=float, default=1e-3)
    p.add_argument("--bc-steps", type=int, default=60, help="behaviour-cloning steps")
    p.add_argument("--bc-lr", type=float, default=1e-3)
    p.add_argument("--rl-steps", type=int, default=6, help="GRPO steps of the sim and real arms")
    p.add_argument("--rl-lr", type=float, default=3e-4)
    p.add_argument("--rl-tasks", choices=("train", "fresh"), default="train",
                   help="the tasks GRPO trains on: those of the training episodes (which behaviour "
                        "cloning saw solved), or as many freshly sampled ones, never collected")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature of GRPO's rollouts")
    p.add_argument("--tasks-per-step", type=int, default=4)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--max-turns", type=int, default=3)
    p.add_argument("--max-action-tokens", type=int, default=64)
    p.add_argument("--eval-tasks", type=int, default=24)
    p.add_argument("--eval-batch", type=int, default=8)
    p.add_argument("--warm-start", action="store_true", help="also clone from the world model")
    p.add_argument("--rl-from-warm-start", action="store_true",
                   help="with --warm-start: the RL arms start from the world-model-initialised clone")
    p.add_argument("--arms", type=lambda text: [x.strip() for x in text.split(";")], default=list(ARMS),
                   help=f"RL arms to run, ';'-separated (default: {'; '.join(ARMS)}; also "
                        "'RL in sim, transcript'); the wall-clock arm needs a sim arm before it")
    p.add_argument("--reanchor-every", type=int, default=2,
                   help="the re-anchored arm: anchor every k simulated steps (0: only at the end)")
    p.add_argument("--no-reanchor-at-end", dest="reanchor_at_end", action="store_false",
                   help="the re-anchored arm: do not anchor at the episode's end")
    p.add_argument("--judge", help="a judge reward source to measure: 'world-model' (the world-model "
                   "checkpoint served on loopback) or an OpenAI-compatible /v1 URL")
    p.add_argument("--judge-model", help="the judge's model id (with a URL --judge)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="run directory (default: runs/simrl, runs/simrl_terminal)")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args(argv)
    valid = [n for n, _ in SIM_ARMS] + list(ARMS[2:])
    if any(x not in valid for x in a.arms):
        p.error(f"unknown arm in --arms {a.arms}; valid: {valid}")
    a.out = a.out or ("runs/simrl" if a.domain == "mcp" else f"runs/simrl_{a.domain}")
    if a.quick:
        a.episodes, a.sft_steps, a.bc_steps, a.rl_steps = 40, 60, 20, 2
        a.eval_tasks, a.tasks_per_step, a.group_size = 8, 2, 2
    return a


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    a = parse_args(argv)
    torch.set_num_threads(a.threads)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    domain = DOMAINS[a.domain]()
    train, held, collect_s = real_episodes(domain, a, out)
    print(f"{len(train)} train / {len(held)} held-out real episodes ({collect_s:.0f} s)", flush=True)
    wm, wm_s = world_model(train, a, out)
    print(f"world model {wm} ({wm_s:.0f} s)", flush=True)
    with judge_for(a, wm) as judge:
        result = run(a, domain, train, held, wm, judge)
    result.update(collect_s=round(collect_s, 1), wm_s=round(wm_s, 1), total_s=round(time.perf_counter() - t0, 1))
    if judge is not None:
        result["judge"] = {"endpoint": a.judge, "model": judge.model, **judge.stats.as_dict()}
    print(f"total {result['total_s']:.0f} s", flush=True)
    save_json(out / "result.json", result)
    if a.json:
        save_json(Path(a.json), result)
    return result


def run(a: argparse.Namespace, domain: Domain, train: list, held: list, wm: str, judge: Any) -> dict[str, Any]:
    """The agent and its arms (module docstring, steps 3 to 5) on world model ``wm``."""
    out = Path(a.out)
    experts = [e for e in train if e.metadata["policy"] == "scripted" and any(s.info.get("success") for s in e.steps)]
    tasks = [e.task for e in train if e.task is not None]
    if a.rl_tasks == "fresh":  # tasks of no collected episode: the simulator needs none recorded
        tasks = domain.tasks().sample(len(tasks), seed=a.seed + 1_000_003)
    evals = held_tasks(held, a.eval_tasks)
    print(f"{len(experts)} expert episodes; {len(evals)} held-out tasks", flush=True)
    result: dict[str, Any] = {"args": vars(a), "fidelity": fidelity(wm, domain, held, a, judge), "arms": {}}
    tokenizer = str(Path(wm).parent / "tokenizer") if not a.world_model else wm
    start = clone_agent(a.preset, experts, out / "agent_bc", a, tokenizer=tokenizer)
    marks = sorted({max(1, a.rl_steps // 2), a.rl_steps})
    no_rl = evaluate("no RL (behaviour cloning)", start, domain, evals, a)
    arms = result["arms"]
    arms["no RL"] = {"points": [{"steps": 0, "real_success": no_rl}]}
    if a.warm_start:
        warm = clone_agent(wm, experts, out / "agent_bc_wm", a)
        warm_rate = evaluate("no RL, world-model init", warm, domain, evals, a)
        arms["no RL, warm start"] = {"points": [{"steps": 0, "real_success": warm_rate}]}
        if a.rl_from_warm_start:
            start, no_rl = warm, warm_rate
    save_json(out / "result.json", result)
    sim_s = 0.0
    for name, source in SIM_ARMS:
        if name not in a.arms:
            continue
        anchoring = None
        if "re-anchored" in name:
            anchoring = Anchoring(domain.make_env, every=a.reanchor_every, at_end=a.reanchor_at_end)
        factory = SimFactory(wm, domain, source, a.max_turns, anchoring=anchoring)
        points = [{"steps": 0, "real_success": no_rl}]
        for rec in grpo(name, start, factory, tasks, out / name.replace(" ", "_").replace(",", ""), a, marks):
            rec["real_success"] = evaluate(f"{name} @ {rec['steps']}", rec["checkpoint"], domain, evals, a)
            rec["real_steps"] = factory.real_steps
            points.append(rec)
        sim_s = sim_s or points[-1]["train_s"]
        arms[name] = {"points": points, "source": source, "train_episodes": len(factory.episodes),
                      "gap": sim_gap(points[-1]["checkpoint"], wm, domain, evals, source, a, judge),
                      "train_gap": gap_report(factory.episodes[-32:], domain.make_env)}  # fmt: skip
        if anchoring is not None:
            arms[name]["reanchor"] = {"every": anchoring.every, "at_end": anchoring.at_end,
                                      "real_steps": factory.real_steps}  # fmt: skip
            print(f"    re-anchoring ran {factory.real_steps} real steps in training", flush=True)
        save_json(out / "result.json", result)
    for name, budget in (("RL real, same steps", None), ("RL real, same wall-clock", sim_s or None)):
        if name not in a.arms or (budget is None and "wall-clock" in name):
            continue
        points = [{"steps": 0, "real_success": no_rl}]
        steps = marks if budget is None else [10_000]
        for rec in grpo(name, start, domain.make_env, tasks, out / name.replace(" ", "_").replace(",", ""),
                        a, steps, budget_s=budget):  # fmt: skip
            rec["real_success"] = evaluate(f"{name} @ {rec['steps']}", rec["checkpoint"], domain, evals, a)
            rec["real_steps"] = rec["env_steps"]
            points.append(rec)
        arms[name] = {"points": points}
        save_json(out / "result.json", result)
    return result


if __name__ == "__main__":
    main()
