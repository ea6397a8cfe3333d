"""Q-learning on real, simulated or mixed (Dyna-style) experience, then a greedy evaluation
on the REAL environment (the ``agent`` trainer's ``policy="q-learning"``).

``env`` says where experience comes from: ``real:DOMAIN`` (the domain's real environment) or
``sim:CHECKPOINT`` (a world model served as a :class:`~agentworld.sim.SimVectorEnv`); ``mix``
is the fraction of real episodes, real and simulated episodes interleaved in that ratio and one
agent learning from both (Dyna: Sutton, 1990, "Integrated architectures for learning, planning,
and reacting based on approximating dynamic programming", ICML).
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any, Self

from agentworld.core import plugins
from agentworld.core.io import atomic_write
from agentworld.trainers.agents.config import AgentConfig
from agentworld.trainers.agents.envs import (
    EnvSpec,
    EpisodeResult,
    RealRunner,
    SimRunner,
    Source,
    checkpoint_card,
    checkpoint_dir,
    domain_actions,
    load_world_model,
    parse_env_spec,
)
from agentworld.trainers.agents.evaluate import evaluate_agent, evaluate_random
from agentworld.trainers.agents.qlearning import EpsilonSchedule, QLearningAgent

AGENT_FILE = "agent.json"
METRICS_FILE = "metrics.json"


def resolve(cfg: AgentConfig) -> tuple[EnvSpec, Any, Path | None, float]:
    """``(env spec, domain, checkpoint dir or None, mix)`` checked before any training.

    Raises:
        ValueError, UnknownPluginError: as :meth:`AgentTrainer.train`.
    """
    spec = parse_env_spec(cfg.env)
    if spec.kind is Source.REAL:
        if cfg.mix not in (None, 1.0):
            raise ValueError(
                f"--mix {cfg.mix} needs --env sim:CHECKPOINT (the simulated share); "
                "with real:DOMAIN every episode is real"
            )
        if cfg.domain not in (None, spec.target):
            raise ValueError(f"domain={cfg.domain!r} contradicts --env {spec}")
        return spec, plugins.get_domain(spec.target), None, 1.0
    ckpt = checkpoint_dir(spec.target)
    card = checkpoint_card(ckpt)
    name = cfg.domain or card.get("domain")
    if not name:
        raise ValueError(
            f"checkpoint {spec.target!r} records no domain (no agentworld.json card); pass "
            f"--set domain=NAME (installed: {', '.join(plugins.names('domain'))})"
        )
    domain = plugins.get_domain(name)
    mix = 0.0 if cfg.mix is None else cfg.mix
    if mix < 1.0:
        from agentworld.sim.outcome import resolve_reward_source

        source = resolve_reward_source(cfg.reward_source, domain, bool(card.get("rewards")))
        if source == "none":
            raise ValueError(
                f"neither checkpoint {spec.target!r} (no reward footer) nor domain {name!r} "
                "(no verify) gives simulated rewards; Q-learning would learn nothing from them"
            )
    return spec, domain, ckpt, mix


def make_agent(cfg: AgentConfig, actions: list[str]) -> QLearningAgent:
    """A Q-learning agent over ``actions`` with ``cfg``'s hyper-parameters: fresh, or
    ``cfg.init_agent``'s Q-table (and its state-key settings, which the table's keys depend on)
    with this config's rates and a restarted exploration schedule.

    Raises:
        ValueError: ``init_agent`` acts with other action words than the domain's.
        FileNotFoundError: ``init_agent`` does not exist.
    """
    decay_episodes = cfg.epsilon_decay_episodes or max(1, int(0.8 * cfg.episodes))
    schedule = EpsilonSchedule(
        cfg.epsilon_start, cfg.epsilon_end, decay_episodes, cfg.epsilon_decay
    )
    if cfg.init_agent is not None:
        agent = QLearningAgent.load(cfg.init_agent)
        if agent.actions != actions:
            raise ValueError(
                f"init_agent {cfg.init_agent!r} acts with {agent.actions}, the domain with {actions}"
            )
        agent.alpha, agent.gamma, agent.epsilon = cfg.alpha, cfg.gamma, schedule
        agent.num_episodes = 0
        agent.rng = random.Random(cfg.seed)
        return agent
    return QLearningAgent(
        actions,
        alpha=cfg.alpha,
        gamma=cfg.gamma,
        epsilon=schedule,
        seed=cfg.seed,
        initial_q=cfg.initial_q,
        ignore_lines=tuple(cfg.ignore_lines),
        key_lines=tuple(cfg.key_lines),
    )


def train_q_learning(cfg: AgentConfig) -> str:
    """Run the whole ``agent`` stage for ``policy="q-learning"``; returns ``cfg.output_dir``.

    Raises:
        ValueError, UnknownPluginError: as :meth:`AgentTrainer.train` (before any training).
    """
    started = time.monotonic()
    spec, domain, ckpt, mix = resolve(cfg)
    agent = make_agent(cfg, domain_actions(domain))
    n_real = round(mix * cfg.episodes)
    n_sim = cfg.episodes - n_real
    real = RealRunner(domain, seed=cfg.seed, max_steps=cfg.max_steps) if n_real else None
    sim = None
    if n_sim:
        assert ckpt is not None
        world_model = load_world_model(
            ckpt,
            backend=cfg.backend,
            temperature=cfg.temperature,
            seed=cfg.seed,
            max_new_tokens=cfg.max_new_tokens,
            options=cfg.load_options,
        )
        env_options: dict[str, Any] = {
            "on_parse_error": cfg.on_parse_error,
            "max_retries": cfg.max_retries,
        }
        if cfg.reward_source is not None:
            env_options["reward_source"] = cfg.reward_source
        sim = SimRunner(
            world_model,
            domain,
            num_envs=cfg.num_envs,
            seed=cfg.seed,
            max_steps=cfg.max_steps,
            env_options=env_options,
        )
    results: list[EpisodeResult] = []
    wall = {Source.REAL: 0.0, Source.SIM: 0.0}
    with _Progress(cfg, spec) as bar:
        try:
            real_done = sim_done = 0
            while real_done < n_real or sim_done < n_sim:
                # Interleave by progress fraction: the source further behind its share goes next.
                use_real = (
                    real is not None
                    and real_done < n_real
                    and (sim_done >= n_sim or real_done * n_sim <= sim_done * n_real)
                )
                t0 = time.monotonic()
                if use_real:
                    assert real is not None
                    batch = real.run(agent, 1)
                    real_done += len(batch)
                else:
                    assert sim is not None
                    batch = sim.run(agent, min(cfg.num_envs, n_sim - sim_done))
                    sim_done += len(batch)
                wall[Source.REAL if use_real else Source.SIM] += time.monotonic() - t0
                before = len(results)
                results += batch
                bar.update(results, real, sim)
                if (
                    cfg.callback is not None
                    and len(results) // cfg.log_every > before // cfg.log_every
                ):
                    cfg.callback(_log_record(results, real, sim, started))
        finally:
            for runner in (real, sim):
                if runner is not None:
                    runner.close()
    out = Path(cfg.output_dir)
    agent.save(out / AGENT_FILE)
    train_wall_s = time.monotonic() - started
    metrics = _metrics(cfg, spec, domain, mix, agent, results, real, sim, wall, train_wall_s)
    if cfg.eval_episodes:
        t0 = time.monotonic()
        metrics["eval"] = evaluate_agent(
            agent, domain, cfg.eval_episodes, cfg.eval_seed, max_steps=cfg.eval_max_steps
        )
        if cfg.baseline:
            metrics["random_baseline"] = evaluate_random(
                domain, cfg.eval_episodes, cfg.eval_seed, max_steps=cfg.eval_max_steps
            )
        metrics["eval_wall_s"] = time.monotonic() - t0
        if cfg.progress:
            e = metrics["eval"]
            low, high = e["success_ci"]
            print(
                f"real-env evaluation ({e['episodes']} episodes): success {e['success_rate']:.3f} "
                f"[{low:.3f}, {high:.3f}], mean return {e['mean_return']:.2f}"
            )
    metrics["wall_s"] = time.monotonic() - started
    atomic_write(str(out / METRICS_FILE), json.dumps(metrics, indent=1) + "\n")
    return str(out)


def _log_record(
    results: list[EpisodeResult], real: RealRunner | None, sim: SimRunner | None, started: float
) -> dict[str, Any]:
    recent = results[-100:]
    return {
        "episode": len(results),
        "mean_return_100": sum(r.ret for r in recent) / len(recent),
        "real_steps": real.num_steps if real else 0,
        "sim_steps": sim.num_steps if sim else 0,
        "parse_failures": sim.parse_failures if sim else 0,
        "elapsed_s": time.monotonic() - started,
    }


def _curve(returns: list[float], points: int = 100) -> list[float]:
    """Mean return of consecutive windows (``len(returns) / points`` episodes each)."""
    window = max(1, len(returns) // points)
    return [
        sum(returns[i : i + window]) / len(returns[i : i + window])
        for i in range(0, len(returns), window)
    ]


def _metrics(
    cfg: AgentConfig,
    spec: EnvSpec,
    domain: Any,
    mix: float,
    agent: QLearningAgent,
    results: list[EpisodeResult],
    real: RealRunner | None,
    sim: SimRunner | None,
    wall: dict[Source, float],
    train_wall_s: float,
) -> dict[str, Any]:
    returns = [r.ret for r in results]
    real_steps, sim_steps = (real.num_steps if real else 0), (sim.num_steps if sim else 0)
    return {
        "env": str(spec),
        "domain": domain.name,
        "policy": cfg.policy,
        "mix": mix,
        "episodes": len(results),
        "real_episodes": sum(r.source is Source.REAL for r in results),
        "sim_episodes": sum(r.source is Source.SIM for r in results),
        "real_steps": real_steps,
        "sim_steps": sim_steps,
        "parse_failures": sim.parse_failures if sim else 0,
        "sim_unparsed_samples": sim.env.parse_failures if sim else 0,
        "sim_errors": sim.errors if sim else 0,
        "real_train_wall_s": wall[Source.REAL],
        "sim_train_wall_s": wall[Source.SIM],
        "real_steps_per_s": real_steps / wall[Source.REAL] if wall[Source.REAL] else None,
        "sim_steps_per_s": sim_steps / wall[Source.SIM] if wall[Source.SIM] else None,
        "train_wall_s": train_wall_s,
        "outcomes": dict(Counter(r.outcome.value for r in results)),
        "returns": [round(x, 6) for x in returns],
        "sources": "".join("r" if r.source is Source.REAL else "s" for r in results),
        "curve": _curve(returns),
        "q_states": len(agent.q),
        "final_epsilon": agent.current_epsilon,
        "agent": AGENT_FILE,
        "config": cfg.model_dump(mode="json", exclude={"callback"}),
    }


class _Progress:
    """A rich progress bar over training episodes (nothing shown when ``cfg.progress`` is off)."""

    def __init__(self, cfg: AgentConfig, spec: EnvSpec):
        self.bar: Any = None
        self.task: Any = None
        if cfg.progress:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.bar = Progress(
                TextColumn(f"agent {spec}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[info]}"),
                TimeElapsedColumn(),
            )
            self.task = self.bar.add_task("train", total=cfg.episodes, info="")

    def __enter__(self) -> Self:
        if self.bar is not None:
            self.bar.start()
        return self

    def update(
        self, results: list[EpisodeResult], real: RealRunner | None, sim: SimRunner | None
    ) -> None:
        if self.bar is None:
            return
        recent = results[-100:]
        info = (
            f"return(100) {sum(r.ret for r in recent) / len(recent):.3f}  "
            f"real {real.num_steps if real else 0}  sim {sim.num_steps if sim else 0}  "
            f"unparsed {sim.parse_failures if sim else 0}"
        )
        self.bar.update(self.task, completed=len(results), info=info)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
