"""Set-up of bench/simrl.py: the easy tasks of each domain (mcp, terminal), real episodes, the
world model and the behaviour-cloned agent (the "no RL" starting point of every arm).

Not a bench of its own: bench/simrl.py imports it (bench/README.md names both).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentworld.core import plugins
from agentworld.core.collect import collect, split
from agentworld.core.io import read_episodes, write_episodes
from agentworld.core.types import Episode, Task
from agentworld.domains.mcp.calls import render_call
from agentworld.domains.mcp.domain import McpDomain
from agentworld.domains.mcp.prompt import ROLE
from agentworld.domains.mcp.tasks import McpTaskSampler
from agentworld.domains.terminal.domain import TerminalDomain
from agentworld.domains.terminal.expert import ScriptedExpert
from agentworld.domains.terminal.random_policy import RandomPolicy
from agentworld.domains.terminal.tasks import TerminalTaskSampler
from agentworld.sim import SimEnv
from agentworld.sim.backends.hf import HFBackend
from agentworld.trainers.agents.policy_sft import PolicySftTrainer
from agentworld.trainers.agents.simrl.anchor import Anchoring
from agentworld.trainers.agents.simrl.judge import TranscriptJudge
from agentworld.trainers.agents.simrl.rewards import RewardedSimEnv, SimEpisode
from agentworld.trainers.models.tokenizer import train_tokenizer
from agentworld.trainers.training.base import corpus_texts

KINDS = ("lookup", "create")
SERVERS = ("notes",)
COLLECT_STEPS = 4  # steps per collected real episode at most


class EasyMcp(McpDomain):
    """The mcp domain restricted to one- or two-call tasks (:data:`KINDS` on :data:`SERVERS`):
    ones a small agent can solve at all; the world model's system prompt lists the tools by
    signature (the initial observation's lines) instead of their JSON schemas, about 1,300
    characters instead of 2,900, which halves the world model's training tokens."""

    def tasks(self) -> McpTaskSampler:
        return McpTaskSampler(kinds=KINDS, servers=SERVERS)

    def system_prompt(self, task: Task | None) -> str:
        server = (task.setup.get("server") if task else None) or "notes"
        parts = [ROLE.format(name=f" named {server!r}"), self.initial_observation(task)]
        calls = task.setup.get("calls") if task else None
        if calls:
            lines = "\n".join(render_call(c["name"], c.get("arguments", {})) for c in calls)
            parts.append(f"Before the episode the server's state was set up with these calls:\n{lines}")
        return "\n\n".join(parts)


TERMINAL_KINDS = ("create", "delete", "inspect", "navigate")


class EasyTerminal(TerminalDomain):
    """The terminal domain restricted to :data:`TERMINAL_KINDS` (one or two commands each), with
    a scripted expert that goes straight to the task's commands (no looking around first).
    Two kinds are checked on the file tree (``create``, ``delete``: only the world model's
    footer can reward them in simulation), two on what the command prints (``inspect``,
    ``navigate``: the transcript verifier decides them from the simulated observation)."""

    def tasks(self) -> TerminalTaskSampler:
        return TerminalTaskSampler(kinds=TERMINAL_KINDS)

    def policies(self) -> dict[str, Any]:
        return {"scripted": ScriptedExpert(explore=False), "random": RandomPolicy()}


DOMAINS = {"mcp": EasyMcp, "terminal": EasyTerminal}
Domain = EasyMcp | EasyTerminal


def real_episodes(domain: Domain, a: Any, out: Path) -> tuple[list[Episode], list[Episode], float]:
    """Collect (or read back) ``a.episodes`` real episodes (scripted expert and random policy);
    the reward footer is switched on (the real task check's reward and termination, which the
    world model learns to predict). Returns ``(train, held-out, seconds)``."""
    path = out / "episodes.jsonl"
    started = time.perf_counter()
    if path.is_file():
        episodes = read_episodes(str(path))
    else:
        mix = {"scripted": a.expert_fraction, "random": 1 - a.expert_fraction}
        episodes = collect(domain, a.episodes, policies=mix, seed=a.seed, max_steps=COLLECT_STEPS, workers=2)
        for e in episodes:
            e.metadata["rewards"] = True
            e.system_prompt = domain.system_prompt(e.task)
        write_episodes(str(path), episodes)
    train, held = split(episodes, 0.2, a.seed)
    return train, held, time.perf_counter() - started


def world_model(train: list[Episode], a: Any, out: Path) -> tuple[str, float]:
    """Tokenizer + ``cpt`` (none with ``a.cpt_steps == 0``) + ``sft`` on ``train`` (step
    budgets), or ``a.world_model``;
    returns ``(checkpoint, seconds)``."""
    if a.world_model:
        return a.world_model, 0.0
    done = out / "world_model" / "sft"
    if (done / "config.json").is_file():
        return str(done), 0.0
    started = time.perf_counter()
    tok = out / "world_model" / "tokenizer"
    train_tokenizer(corpus_texts(train), a.vocab_size, tok)
    common = {"seed": a.seed, "num_threads": a.threads, "log_every": 10, "overwrite": True}
    start: dict[str, str] = {"model": a.preset, "tokenizer": str(tok)}
    if a.cpt_steps:
        start = {"model": plugins.get_trainer("cpt").train(train, {
            "output_dir": str(out / "world_model" / "cpt"), "max_steps": a.cpt_steps, **start,
            **common})}  # fmt: skip
    sft = plugins.get_trainer("sft").train(train, {
        "output_dir": str(done), "max_steps": a.sft_steps, "batch_size": a.wm_batch,
        "lr": a.wm_lr, **start, **common})  # fmt: skip
    return sft, time.perf_counter() - started


def clone_agent(start: str, experts: Sequence[Episode], out: Path, a: Any, tokenizer: str | None = None) -> str:
    """Behaviour cloning (``policy_sft``) of the expert episodes from ``start`` (a preset with
    ``tokenizer``, or a checkpoint); returns the policy checkpoint."""
    if (out / "config.json").is_file():
        return str(out)
    options = {"output_dir": str(out), "model": start, "max_steps": a.bc_steps, "seed": a.seed,
               "batch_size": 8, "lr": a.bc_lr, "warmup_steps": 5, "num_threads": a.threads,
               "log_every": 10, "overwrite": True}  # fmt: skip
    if tokenizer is not None:
        options["tokenizer"] = tokenizer
    return PolicySftTrainer().train(list(experts), options)


class SimFactory:
    """Makes simulated environments on one shared simulator of ``checkpoint``, rewarded by
    ``source`` (a ``judge`` asked at every step when given; re-anchored on the real
    environment with ``anchoring``); finished episodes land in :attr:`episodes`."""

    def __init__(self, checkpoint: str, domain: Domain, source: str, max_turns: int,
                 max_new_tokens: int = 160, *, judge: TranscriptJudge | None = None,
                 anchoring: Anchoring | None = None):  # fmt: skip
        self.wm = HFBackend().load(checkpoint, max_new_tokens=max_new_tokens)
        self.domain, self.source, self.max_turns = domain, source, max_turns
        self.judge, self.anchoring = judge, anchoring
        self.episodes: list[SimEpisode] = []

    def __call__(self) -> RewardedSimEnv:
        sim = SimEnv(self.wm, domain=self.domain, reward_source="none", max_steps=self.max_turns)
        return RewardedSimEnv(sim, self.domain, self.source, on_episode=self.episodes.append,
                              judge=self.judge, anchoring=self.anchoring)  # fmt: skip

    @property
    def real_steps(self) -> int:
        """Real environment steps the re-anchoring of the finished episodes ran."""
        return sum(e.real_steps for e in self.episodes)


@contextmanager
def judge_for(a: Any, world_model: str) -> Iterator[TranscriptJudge | None]:
    """The judge of ``a.judge``: ``None`` (no judge), ``"world-model"`` (the world-model
    checkpoint served by our OpenAI-compatible server on loopback for the block), or an
    endpoint URL (model ``a.judge_model``, key from the environment,
    :mod:`agentworld.trainers.agents.simrl.judge`)."""
    if not a.judge:
        yield None
        return
    if a.judge != "world-model":
        yield TranscriptJudge(a.judge, a.judge_model)
        return
    from agentworld.sim.server.chat import chat_model_for
    from agentworld.sim.server.thread import serve_in_thread

    served = HFBackend().load(world_model, max_new_tokens=8)
    with serve_in_thread(chat_model_for(served, default_max_tokens=8), "world-model") as server:
        yield TranscriptJudge(server.base_url, "world-model", max_tokens=8)


def held_tasks(held: list[Episode], n: int) -> list[Task]:
    """Up to ``n`` distinct held-out tasks."""
    seen, out = set(), []
    for e in held:
        if e.task is not None and e.task.id not in seen:
            seen.add(e.task.id)
            out.append(e.task)
    return out[:n]


def save_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, indent=1))
    tmp.replace(path)
