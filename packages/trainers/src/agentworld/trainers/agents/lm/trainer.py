"""Multi-turn GRPO for language-model agent policies, against any ``Environment``.

Each optimizer step: pick ``tasks_per_step`` tasks, roll out ``group_size`` episodes of
each from the same initial state (``G`` environments reset with the same task and seed)
through the sim runtime's paged engine running the very policy being trained
(:mod:`agentworld.trainers.agents.lm.rollout`), take each episode's return as its reward,
normalise the returns within each group (GRPO, Shao et al. 2024, arXiv 2402.03300) and
give the advantage to every action token of the episode; observation, system and template
tokens are masked out of the loss. The loss is the token-level clipped surrogate with a k3
KL to the frozen starting policy (:mod:`agentworld.trainers.training.grpo`, shared with the ``rl``
stage). After the update the engine's KV cache is dropped (new model version as hash salt).
The step is :class:`AgentLoop` on the GRPO loop shared with the ``rl`` stage
(:class:`~agentworld.trainers.training.grpo_loop.GrpoLoop`), so checkpoints, resume, the time
budget, the metrics log and the output-directory rules are the world-model stages' own.

The environment may be real or simulated (``SimEnv``): anything with
``reset(*, seed, options) -> (obs, info)`` and ``step(action) -> (obs, reward, terminated,
truncated, info)``; observations are ``Observation`` objects or strings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from agentworld.core.protocols import EnvironmentBatch
from agentworld.core.types import Task
from transformers import AutoTokenizer

from agentworld.trainers.agents.lm.config import LmAgentConfig
from agentworld.trainers.agents.lm.data import (
    EpisodeStatus,
    Trajectory,
    episode_batch,
    group_seeds,
    pick_tasks,
)
from agentworld.trainers.agents.lm.rollout import AgentRollouts
from agentworld.trainers.models.specs import (
    TOKENIZER_FILES,
    ModelSpecError,
    has_tokenizer,
    is_checkpoint_dir,
)
from agentworld.trainers.training.config import validate_config
from agentworld.trainers.training.grpo_loop import GrpoLoop, GrpoStep
from agentworld.trainers.training.setup import (
    check_output_dir,
    load_policy,
    make_optimizer,
    output_dir_guard,
    prepare_output_dir,
    restore,
)
from agentworld.trainers.world_model.rl_data import request_seeds

METRICS = "metrics.jsonl"
STAGE = "agent-lm"

__all__ = ["LmAgentConfig", "check_lm_agent", "train_lm_agent"]


def check_lm_agent(config: LmAgentConfig | dict[str, Any]) -> LmAgentConfig:
    """Validate ``config`` and its ``output_dir`` before anything loads; returns the config.

    Raises:
        agentworld.trainers.training.config.ConfigError: invalid ``config`` (unknown keys named,
            valid ones listed).
        agentworld.trainers.models.specs.ModelSpecError: a checkpoint directory without a
            tokenizer and no ``tokenizer`` given.
        agentworld.trainers.training.setup.OutputDirError: ``output_dir`` is a file, or holds
            a checkpoint and neither ``resume`` nor ``overwrite`` is set.
    """
    cfg = config if isinstance(config, LmAgentConfig) else validate_config(LmAgentConfig, config)
    if is_checkpoint_dir(cfg.model) and cfg.tokenizer is None and not has_tokenizer(cfg.model):
        raise ModelSpecError(
            f"model directory {cfg.model!r} has no tokenizer (none of "
            f"{', '.join(TOKENIZER_FILES)}); save one next to the model or set tokenizer=<dir>"
        )
    check_output_dir(cfg)
    return cfg


def train_lm_agent(
    env_factory: Callable[[], Any],
    tasks: Sequence[Task],
    config: LmAgentConfig | dict[str, Any],
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> str:
    """Train a language-model policy with multi-turn GRPO; returns ``output_dir``.

    ``output_dir`` then holds a ``from_pretrained``-loadable policy (LoRA merged; the
    adapter alone in ``adapter/``), ``metrics.jsonl`` (one record per logged step: ``step,
    loss, lr, return, return_std, success_rate, kl, clip_frac, ratio, episode_len (turns),
    action_tokens (this step), truncated (fraction of episodes the environment did not
    terminate: truncated, out of turns or of context), parse_failures, prefix_hit_rate, rollout_s,
    update_s, tokens_per_s (sampled tokens per rollout second), retried (episodes of the step
    re-run after their Ray actor died), episodes, env_steps, elapsed_s``) and ``trainer_state/`` for resume. As in the world-model stages, an
    ``output_dir`` holding a checkpoint is refused unless ``resume`` or ``overwrite`` is set,
    and a run that fails removes the ``output_dir`` it created unless a checkpoint to resume
    was saved there.

    Args:
        env_factory: Makes one environment; called ``tasks_per_step * group_size`` times
            (real or simulated; closed at the end). With ``rollout_executor = "ray"`` it is
            pickled to the Ray actors and called there (a factory that loads a world model
            once per process gives each actor its own: :class:`agentworld.sim.SimEnvFactory`).
        tasks: Tasks to train on (>= 1); each env is reset with ``options={"task": task}``.
        config: :class:`LmAgentConfig` or its dict.
        progress: Called with every metrics record (a dict), after ``config.callback``.

    Raises:
        agentworld.trainers.training.config.ConfigError: invalid ``config`` (unknown keys named, valid ones listed).
        ValueError: no task; a tokenizer without a chat template; a first prompt that
            leaves no room for an action; more than one accelerate process.
        agentworld.trainers.models.specs.ModelSpecError: unknown preset, missing model path, or
            a checkpoint directory without a tokenizer and no ``tokenizer`` given.
        agentworld.trainers.training.setup.OutputDirError: see :func:`check_lm_agent`.
        RuntimeError: the engine failed a policy request (e.g. ``engine_options`` too small).
        ConnectionError: ``rollout_executor = "ray"`` and no Ray cluster answers at
            ``ray_address`` (one line, before the model loads).
        agentworld.core.ray_collect.WorkerLostError: an episode's Ray actor died twice.
    """
    cfg = check_lm_agent(config)
    tasks = list(tasks)
    if not tasks:
        raise ValueError("train_lm_agent needs at least one task, got none")
    out = Path(cfg.output_dir)
    with output_dir_guard(out):
        return _train(env_factory, tasks, cfg, out, progress)


def _train(
    env_factory: Callable[[], Any],
    tasks: list[Task],
    cfg: LmAgentConfig,
    out: Path,
    progress: Callable[[dict[str, Any]], None] | None,
) -> str:
    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    state_dir = prepare_output_dir(cfg)
    envs = make_envs(env_factory, cfg)
    try:
        _run(envs, tasks, cfg, out, state_dir, progress)
    finally:
        if isinstance(envs, EnvironmentBatch):
            envs.close()
        else:
            for env in envs:
                env.close()
    return str(out)


def make_envs(env_factory: Callable[[], Any], cfg: LmAgentConfig) -> list[Any] | EnvironmentBatch:
    """The ``tasks_per_step * group_size`` environments of a step: made here, or on Ray actors
    (``rollout_executor = "ray"``).

    Raises:
        ConnectionError: no Ray cluster at ``cfg.ray_address`` (one line).
    """
    n = cfg.tasks_per_step * cfg.group_size
    if cfg.rollout_executor == "ray":
        from agentworld.core.ray_envs import RayEnvironments

        return RayEnvironments(env_factory, n, actors=cfg.ray_actors, address=cfg.ray_address,
                               workers=cfg.env_workers)
    return [env_factory() for _ in range(n)]


def _run(
    envs: list[Any] | EnvironmentBatch,
    tasks: list[Task],
    cfg: LmAgentConfig,
    out: Path,
    state_dir: Path | None,
    progress: Callable[[dict[str, Any]], None] | None,
) -> None:
    tokenizer = None
    if state_dir is not None and (out / "tokenizer_config.json").is_file():
        tokenizer = AutoTokenizer.from_pretrained(str(out))
    elif cfg.tokenizer is not None:
        tokenizer = AutoTokenizer.from_pretrained(cfg.tokenizer)
    set_seed(cfg.seed)
    model, tokenizer = load_policy(cfg, tokenizer)
    if not tokenizer.chat_template:
        raise ValueError("the policy's tokenizer has no chat template (ChatML expected)")
    acc = Accelerator()
    if acc.num_processes > 1:
        raise ValueError("train_lm_agent runs on one process (rollouts are not sharded yet)")
    model, opt = acc.prepare(model, make_optimizer(model, cfg))
    counters: dict[str, Any] = {"step": 0, "episodes": 0, "env_steps": 0, "elapsed_s": 0.0}
    restore(acc, out, state_dir, counters, METRICS)
    AgentLoop(
        acc, model, opt, tokenizer, cfg, out, counters, cfg.steps, stage=STAGE,  # type: ignore[arg-type]
        envs=envs, tasks=tasks, progress=progress,
    ).run()  # fmt: skip


class AgentLoop(GrpoLoop):
    """GRPO over whole episodes: ``tasks_per_step`` tasks a step, ``group_size`` episodes of
    each from the same initial state, each episode's return its reward, every action token
    of an episode trained with its advantage."""

    log_name = METRICS
    version_prefix = "agent-step"

    def __init__(
        self,
        *args: Any,
        envs: list[Any] | EnvironmentBatch,
        tasks: list[Task],
        progress: Callable[[dict[str, Any]], None] | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        from agentworld.sim.backends.hf import HFWorldModel

        cfg, tokenizer = self.cfg, self.tokenizer
        self.tasks, self.progress = tasks, progress
        context = self.context_length()
        self.max_seq_len = min(cfg.max_seq_len, context or cfg.max_seq_len)
        if cfg.max_action_tokens >= self.max_seq_len:
            raise ValueError(
                f"max_action_tokens ({cfg.max_action_tokens}) leaves no room for a prompt in "
                f"the model's {self.max_seq_len}-token context"
            )
        block = int(cfg.engine_options.get("block_size", 16))
        seqs = cfg.tasks_per_step * (cfg.group_size + 1)
        engine_options = {
            "num_blocks": seqs * (-(-self.max_seq_len // block) + 1) + 8,
            "max_num_batched_tokens": max(512, self.max_seq_len),
        } | dict(cfg.engine_options)
        self.world_model = HFWorldModel(
            self.policy, tokenizer, max_new_tokens=cfg.max_action_tokens,
            engine_options=engine_options,
        )  # fmt: skip
        self.engine = self.world_model.engine
        self.rollouts = AgentRollouts(
            self.engine,
            tokenizer,
            self.world_model.stop_ids,
            envs,
            group_size=cfg.group_size,
            max_turns=cfg.max_turns,
            max_action_tokens=cfg.max_action_tokens,
            max_seq_len=self.max_seq_len,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            top_k=cfg.top_k,
            agent_prompt=cfg.agent_prompt,
            action_type=cfg.action_type,
            workers=cfg.env_workers,
        )
        self.pad_id = tokenizer.pad_token_id

    def generate(self) -> list[Trajectory]:
        cfg, step = self.cfg, self.c["step"]
        picked = pick_tasks(len(self.tasks), cfg.tasks_per_step, step, cfg.seed)
        n = len(picked) * cfg.group_size
        reset_seeds = group_seeds(len(picked), step, cfg.seed)
        sample_seeds = request_seeds(cfg.seed, step, n * cfg.max_turns)
        return self.rollouts.run(
            [self.tasks[i] for i in picked], reset_seeds, sample_seeds, tag=f"agent{step}"
        )

    def score(self, rows: list[Trajectory]) -> tuple[list[float], dict[str, Any]]:
        return [t.episode_return for t in rows], {}

    def num_tokens(self, rows: list[Trajectory]) -> int:
        return sum(t.num_action_tokens for t in rows)

    def batch(self, rows: list[Trajectory]) -> dict[str, torch.Tensor]:
        return episode_batch(rows, self.pad_id, self.acc.device)

    def metrics(self, step: GrpoStep) -> dict[str, Any]:
        trajectories, c = step.rows, self.c
        c["episodes"] += len(trajectories)
        c["env_steps"] += sum(t.num_turns for t in trajectories)
        n, tokens = len(trajectories), step.num_tokens
        returns = step.rewards
        mean = sum(returns) / n
        return {
            "loss": step.sums["loss"],
            "return": mean,
            "return_std": math.sqrt(sum((r - mean) ** 2 for r in returns) / n),
            "success_rate": sum(t.succeeded for t in trajectories) / n,
            **step.per_token(),
            "episode_len": sum(t.num_turns for t in trajectories) / n,
            "action_tokens": tokens,
            "truncated": sum(t.status is not EpisodeStatus.TERMINATED for t in trajectories) / n,
            "parse_failures": sum(t.parse_failures for t in trajectories),
            "prefix_hit_rate": step.hit_rate,
            "rollout_s": round(step.rollout_s, 3),
            "update_s": round(step.update_s, 3),
            "tokens_per_s": tokens / max(step.rollout_s, 1e-9),
            "retried": sum(t.retried > 0 for t in trajectories),
            "episodes": c["episodes"],
            "env_steps": c["env_steps"],
        }

    def on_log(self, record: dict[str, Any]) -> None:
        if self.progress is not None:
            self.progress(record)
        if self.cfg.console:
            line = (
                f"agent-lm step {record['step']}: return {record['return']:.3f}  success "
                f"{record['success_rate']:.2f}  kl {record['kl']:.4f}  len "
                f"{record['episode_len']:.2f}  action tokens {record['action_tokens']}"
            )
            assert self.reporter is not None
            if self.reporter.bar is not None:
                self.reporter.info(line)
            else:
                print(line, flush=True)
