"""Greedy rollouts of an agent policy in real or simulated environments, and the sim-to-real
gap: success inside the simulator (by each reward source) against the real outcome of the
same actions (:mod:`agentworld.trainers.agents.simrl.replay`).

Rollouts use the LM agent trainer's own rollout code (:class:`~agentworld.trainers.agents.lm.
rollout.AgentRollouts` on the sim runtime's paged engine), so the policy sees exactly the
chat it was trained on; actions are greedy (temperature 0).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from agentworld.core.types import Task
from agentworld.sim.backends.hf import HFWorldModel

from agentworld.trainers.agents.lm.data import AGENT_PROMPT, Trajectory
from agentworld.trainers.agents.lm.rollout import AgentRollouts
from agentworld.trainers.agents.simrl.replay import agreement, replay_many
from agentworld.trainers.agents.simrl.rewards import SOURCES, SimEpisode
from agentworld.trainers.models.specs import load_model


@dataclass(slots=True)
class Rollouts:
    """Greedy episodes of a policy: ``trajectories`` (``[len(tasks)]``, in task order),
    wall time ``seconds`` and the environment steps run (``env_steps``)."""

    trajectories: list[Trajectory]
    seconds: float
    env_steps: int

    @property
    def success(self) -> list[bool]:
        return [t.succeeded for t in self.trajectories]

    @property
    def steps_per_s(self) -> float:
        return self.env_steps / max(self.seconds, 1e-9)


def run_policy(
    policy: str,
    env_factory: Callable[[], Any],
    tasks: Sequence[Task],
    *,
    max_turns: int,
    max_action_tokens: int = 64,
    max_seq_len: int = 1024,
    batch: int = 8,
    agent_prompt: str = AGENT_PROMPT,
) -> Rollouts:
    """One greedy episode of ``policy`` (a checkpoint directory with its tokenizer) per task,
    ``batch`` environments at a time (made by ``env_factory``, closed at the end).

    Raises:
        ValueError: a task's first prompt leaves no room for an action within ``max_seq_len``.
        RuntimeError: the engine failed a policy request.
    """
    model, tokenizer = load_model(policy)
    model.eval()
    context = model.config.get_text_config().max_position_embeddings
    max_seq_len = min(max_seq_len, context)
    block = 16
    wm = HFWorldModel(
        model, tokenizer, max_new_tokens=max_action_tokens, engine_options={
            "num_blocks": 2 * batch * (-(-max_seq_len // block) + 1) + 8,
            "max_num_batched_tokens": max(512, max_seq_len)},
    )  # fmt: skip
    envs = [env_factory() for _ in range(min(batch, len(tasks)))]
    rollouts = AgentRollouts(
        wm.engine, tokenizer, wm.stop_ids, envs, group_size=1, max_turns=max_turns,
        max_action_tokens=max_action_tokens, max_seq_len=max_seq_len, temperature=0.0,
        agent_prompt=agent_prompt, workers=len(envs),
    )  # fmt: skip
    out: list[Trajectory] = []
    started = time.perf_counter()
    try:
        with torch.inference_mode():
            for c in range(0, len(tasks), len(envs)):
                chunk = list(tasks[c : c + len(envs)])
                seeds = [0] * (len(chunk) * max_turns)
                out += rollouts.run(chunk, [0] * len(chunk), seeds, tag=f"eval{c}")
    finally:
        for env in envs:
            env.close()
    seconds = time.perf_counter() - started
    return Rollouts(out, seconds, sum(t.num_turns for t in out))


def gap_report(
    episodes: Sequence[SimEpisode],
    real_env_factory: Callable[[], Any],
    workers: int = 4,
) -> dict[str, Any]:
    """The sim-to-real gap of finished simulated episodes: each is replayed in the real
    environment; returns ``episodes``, ``parse_rate`` (simulated observations that parsed),
    ``real_success`` (rate of the replays), ``real_steps`` (real steps the episodes' anchors
    ran, :mod:`~agentworld.trainers.agents.simrl.anchor`), per source of :data:`SOURCES` that
    gave verdicts (``"judge"`` only with a judge) its ``sim_success`` rate, ``undecided`` rate
    (last verdict ``None``: cannot tell) and
    :class:`~agentworld.trainers.agents.simrl.replay.Agreement` (precision, recall, refuted),
    the same for ``rewarded`` (the success the agent was given: the chosen source's, or the
    real one at an anchor), ``replay_s`` and up to three ``refuted`` examples (task, actions,
    simulated and real last observations) of the footer source's successes that the replay
    refuted."""
    episodes = [e for e in episodes if e.task is not None]
    started = time.perf_counter()
    replays = replay_many(real_env_factory, [(e.task, e.actions) for e in episodes], workers)
    replay_s = time.perf_counter() - started
    true = [r.success for r in replays]
    steps = sum(len(e.actions) for e in episodes)
    n = max(len(episodes), 1)
    report: dict[str, Any] = {
        "episodes": len(episodes),
        "parse_rate": 1 - sum(e.malformed for e in episodes) / max(steps, 1),
        "real_success": sum(true) / n,
        "real_steps": sum(e.real_steps for e in episodes),
        "replay_s": round(replay_s, 2),
        "sources": {},
    }
    for source in [s for s in SOURCES if any(s in e.verdicts for e in episodes)]:
        predicted = [e.success(source) for e in episodes]
        undecided = sum(e.verdicts.get(source) is None for e in episodes) / n
        report["sources"][source] = {
            "sim_success": sum(predicted) / n, "undecided": undecided, **agreement(predicted, true).as_dict()}  # fmt: skip
    rewarded = [e.rewarded for e in episodes]
    report["rewarded"] = {"sim_success": sum(rewarded) / n, **agreement(rewarded, true).as_dict()}
    refuted = [
        {"task": e.task.instruction if e.task else None, "actions": e.actions,
         "simulated": e.observations[-1][:300], "real": r.observations[-1][:300] if r.observations else ""}
        for e, r in zip(episodes, replays, strict=True) if e.success("footer") and not r.success
    ]  # fmt: skip
    report["refuted_examples"] = refuted[:3]
    return report
