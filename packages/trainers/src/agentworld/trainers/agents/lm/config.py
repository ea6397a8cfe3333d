"""Options of the language-model agent trainer (:func:`agentworld.trainers.agents.lm.trainer.train_lm_agent`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from agentworld.trainers.agents.lm.data import AGENT_PROMPT
from agentworld.trainers.agents.lm.rollout import ActionType
from agentworld.trainers.training.config import LoraSettings
from pydantic import BaseModel, ConfigDict, Field, model_validator


class LmAgentConfig(BaseModel):
    """Options of :func:`train_lm_agent` (pydantic v2; unknown keys are errors).

    Attributes:
        model: Policy: a preset (``agentworld.trainers.models.specs.PRESETS``), a checkpoint
            directory (a world-model checkpoint is a valid warm start) or a hub id (``allow_hub``).
        tokenizer: Tokenizer directory; ``None``: the checkpoint's own (presets need one).
        output_dir: Checkpoint, ``metrics.jsonl`` and ``trainer_state/``.
        steps: Optimizer steps.
        tasks_per_step: Groups (tasks) per optimizer step.
        group_size: Episodes per task ``G`` (>= 2: advantages are relative to the group).
        max_turns: Actions per episode at most.
        max_action_tokens: Tokens per action at most.
        max_seq_len: Transcript limit (tokens), capped at the model's context; an episode
            whose next turn would not fit ends there.
        temperature, top_p, top_k: Action sampling (``top_k = 0``: off).
        lr: Peak learning rate; ``warmup_steps`` of linear warm-up, then a cosine to
            ``min_lr_ratio * lr`` (1.0: constant).
        beta: Weight of the k3 KL to the starting policy (0: no reference model).
        clip_eps: PPO clip range of the importance ratio.
        grad_accum: Micro-batches the step's episodes are split into (one optimizer step).
        lora: peft LoRA settings; the base model is then the KL reference.
        seed: Seeds model init, task order, reset and sampling seeds.
        save_every: Checkpoint every N steps (0: only at the end).
        resume: Continue from ``output_dir/trainer_state`` when it exists.
        overwrite: Replace a checkpoint already in ``output_dir``. With neither ``resume``
            nor ``overwrite``, a run refuses an ``output_dir`` that holds one.
        log_every: Write a metrics record every N steps.
        agent_prompt: Appended to the task instruction in the system message.
        action_type: What ``env.step`` receives (see :class:`AgentRollouts`).
        env_workers: Threads stepping environments (in each Ray actor with ``"ray"``).
        rollout_executor: Where the environments live: ``"threads"`` (this process) or
            ``"ray"`` (``ray_actors`` Ray actors, each holding its share of the
            environments, e.g. a world model and its simulated episodes; the policy stays
            here: :class:`agentworld.core.ray_envs.RayEnvironments`).
        ray_address: Ray cluster for ``"ray"`` (``None``: the running session,
            ``$RAY_ADDRESS``, or a new local cluster; ``"auto"``; ``"HOST:PORT"``).
        ray_actors: Ray actors holding environments (one CPU each, at most the cluster's).
        engine_options: :class:`~agentworld.sim.engine.PagedEngine` options (``num_blocks``,
            ``block_size``, ``max_num_batched_tokens``); by default sized to one step.
        time_budget_s: Also stop after this many seconds of training (summed over resumes).
        console: Print one line per logged step.
        progress: Show a rich progress bar.
        callback: Called with every metrics record (programmatic use only).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, allow_inf_nan=False)

    model: str = "default"
    tokenizer: str | None = None
    allow_hub: bool = False
    output_dir: str
    steps: int = Field(100, ge=1)
    tasks_per_step: int = Field(4, ge=1)
    group_size: int = Field(8, ge=2)
    max_turns: int = Field(8, ge=1)
    max_action_tokens: int = Field(32, ge=1)
    max_seq_len: int = Field(2048, ge=16)
    temperature: float = Field(1.0, gt=0)
    top_p: float = Field(1.0, gt=0, le=1)
    top_k: int = Field(0, ge=0)
    lr: float = Field(1e-5, gt=0)
    warmup_steps: int = Field(0, ge=0)
    min_lr_ratio: float = Field(1.0, ge=0, le=1)
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    beta: float = Field(0.04, ge=0)
    clip_eps: float = Field(0.2, gt=0, lt=1)
    grad_accum: int = Field(1, ge=1)
    lora: LoraSettings | None = None
    seed: int = 0
    save_every: int = Field(0, ge=0)
    resume: bool = False
    overwrite: bool = False
    log_every: int = Field(1, ge=1)
    agent_prompt: str = AGENT_PROMPT
    action_type: ActionType = "auto"
    env_workers: int = Field(8, ge=1)
    rollout_executor: Literal["threads", "ray"] = "threads"
    ray_address: str | None = None
    ray_actors: int = Field(2, ge=1)
    engine_options: dict[str, Any] = Field(default_factory=dict)
    num_threads: int | None = Field(None, ge=1)
    time_budget_s: float | None = Field(None, gt=0)
    console: bool = True
    progress: bool = False
    callback: Callable[[dict[str, Any]], None] | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _sizes(self) -> LmAgentConfig:
        episodes = self.tasks_per_step * self.group_size
        if self.grad_accum > episodes:
            raise ValueError(
                f"grad_accum ({self.grad_accum}) exceeds the {episodes} episodes of a step "
                f"(tasks_per_step * group_size)"
            )
        if self.max_action_tokens >= self.max_seq_len:
            raise ValueError(
                f"max_action_tokens ({self.max_action_tokens}) must be below max_seq_len "
                f"({self.max_seq_len})"
            )
        return self
