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

The environment may be real or simulated (``SimEnv``): anything with
``reset(*, seed, options) -> (obs, info)`` and ``step(action) -> (obs, reward, terminated,
truncated, info)``; observations are ``Observation`` objects or strings.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from agentworld.core.types import Task
from agentworld.trainers.training import checkpoint as ckpt
from agentworld.trainers.training import grpo
from agentworld.trainers.agents.lm.config import LmAgentConfig
from agentworld.trainers.agents.lm.data import (
    EpisodeStatus,
    Trajectory,
    episode_batch,
    group_seeds,
    pick_tasks,
)
from agentworld.trainers.agents.lm.rollout import AgentRollouts
from agentworld.trainers.training.config import validate_config
from agentworld.trainers.training.loop import lr_factor, time_is_up
from agentworld.trainers.models.specs import (
    TOKENIZER_FILES,
    ModelSpecError,
    has_tokenizer,
    is_checkpoint_dir,
    load_model,
)
from agentworld.trainers.training.progress import Reporter
from agentworld.trainers.world_model.rl import _reference_model, answer_logprobs
from agentworld.trainers.world_model.rl_data import request_seeds
from transformers import AutoTokenizer

METRICS = "metrics.jsonl"
STAGE = "agent-lm"

__all__ = ["LmAgentConfig", "train_lm_agent"]


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
    update_s, tokens_per_s (sampled tokens per rollout second), episodes, env_steps,
    elapsed_s``) and ``trainer_state/`` for resume.

    Args:
        env_factory: Makes one environment; called ``tasks_per_step * group_size`` times
            (real or simulated; closed at the end).
        tasks: Tasks to train on (>= 1); each env is reset with ``options={"task": task}``.
        config: :class:`LmAgentConfig` or its dict.
        progress: Called with every metrics record (a dict), after ``config.callback``.

    Raises:
        agentworld.trainers.training.config.ConfigError: invalid ``config`` (unknown keys named, valid ones listed).
        ValueError: no task; a tokenizer without a chat template; a first prompt that
            leaves no room for an action; more than one accelerate process.
        agentworld.trainers.models.specs.ModelSpecError: unknown preset, missing model path, or
            a checkpoint directory without a tokenizer and no ``tokenizer`` given.
        RuntimeError: the engine failed a policy request (e.g. ``engine_options`` too small).
    """
    cfg = config if isinstance(config, LmAgentConfig) else validate_config(LmAgentConfig, config)
    tasks = list(tasks)
    if not tasks:
        raise ValueError("train_lm_agent needs at least one task, got none")
    if is_checkpoint_dir(cfg.model) and cfg.tokenizer is None and not has_tokenizer(cfg.model):
        raise ModelSpecError(
            f"model directory {cfg.model!r} has no tokenizer (none of "
            f"{', '.join(TOKENIZER_FILES)}); save one next to the model or set tokenizer=<dir>"
        )
    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    state_dir = ckpt.find_state(out) if cfg.resume else None
    tokenizer = None
    if state_dir is not None and (out / "tokenizer_config.json").is_file():
        tokenizer = AutoTokenizer.from_pretrained(str(out))
    elif cfg.tokenizer is not None:
        tokenizer = AutoTokenizer.from_pretrained(cfg.tokenizer)
    set_seed(cfg.seed)
    model, tokenizer = load_model(cfg.model, tokenizer, allow_hub=cfg.allow_hub)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not tokenizer.chat_template:
        raise ValueError("the policy's tokenizer has no chat template (ChatML expected)")
    if cfg.lora is not None:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            model,
            LoraConfig(
                r=cfg.lora.r,
                lora_alpha=cfg.lora.alpha,
                lora_dropout=cfg.lora.dropout,
                target_modules=cfg.lora.target_modules,
                task_type="CAUSAL_LM",
            ),
        )
    acc = Accelerator()
    if acc.num_processes > 1:
        raise ValueError("train_lm_agent runs on one process (rollouts are not sharded yet)")
    decay = [p for p in model.parameters() if p.requires_grad and p.ndim >= 2]
    rest = [p for p in model.parameters() if p.requires_grad and p.ndim < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest}]
    opt = torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.0)
    model, opt = acc.prepare(model, opt)
    counters: dict[str, Any] = {"step": 0, "episodes": 0, "env_steps": 0, "elapsed_s": 0.0}
    if state_dir is not None:
        counters.update(ckpt.load_state(acc, state_dir))
        ckpt.truncate_log(out, counters["step"], METRICS)
    elif (out / METRICS).exists():
        (out / METRICS).unlink()
    envs = [env_factory() for _ in range(cfg.tasks_per_step * cfg.group_size)]
    try:
        _Run(acc, model, opt, tokenizer, envs, tasks, cfg, out, counters, progress).loop()
    finally:
        for env in envs:
            env.close()
    return str(out)


class _Run:
    """One training run's state: the rollout machinery, the reference, the counters."""

    def __init__(
        self,
        acc: Accelerator,
        model: Any,
        opt: Any,
        tokenizer: Any,
        envs: list[Any],
        tasks: list[Task],
        cfg: LmAgentConfig,
        out: Path,
        counters: dict[str, Any],
        progress: Callable[[dict[str, Any]], None] | None,
    ):
        from agentworld.sim.backends.hf import HFWorldModel

        self.acc, self.model, self.opt, self.tokenizer = acc, model, opt, tokenizer
        self.tasks, self.cfg, self.out, self.c, self.progress = tasks, cfg, out, counters, progress
        self.unwrapped = acc.unwrap_model(model)
        lora = cfg.lora is not None
        policy = self.unwrapped.get_base_model() if lora else self.unwrapped
        self.reference = None
        if cfg.beta > 0 and not lora:
            self.reference = _reference_model(cfg, tokenizer, acc.device)  # type: ignore[arg-type]
        context = getattr(policy.config.get_text_config(), "max_position_embeddings", None)
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
            policy, tokenizer, max_new_tokens=cfg.max_action_tokens, engine_options=engine_options
        )
        self.rollouts = AgentRollouts(
            self.world_model.engine,  # type: ignore[arg-type]
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

    def loop(self) -> None:
        cfg, c = self.cfg, self.c
        reporter = Reporter(cfg, cfg.steps, start=c["step"])  # type: ignore[arg-type]
        start, base_elapsed = time.perf_counter(), c["elapsed_s"]

        def elapsed() -> float:
            return base_elapsed + time.perf_counter() - start

        def finished() -> bool:
            return time_is_up(self.acc, cfg.time_budget_s, elapsed()) or c["step"] >= cfg.steps

        done = finished()
        while not done:
            for group in self.opt.param_groups:
                group["lr"] = cfg.lr * lr_factor(cfg, c["step"], cfg.steps, elapsed())  # type: ignore[arg-type]
            t0 = time.perf_counter()
            trajectories, hit_rate = self._rollout(c["step"])
            t1 = time.perf_counter()
            sums = self._update(trajectories)
            t2 = time.perf_counter()
            c["step"] += 1
            c["episodes"] += len(trajectories)
            c["env_steps"] += sum(t.num_turns for t in trajectories)
            c["elapsed_s"] = elapsed()
            done = finished()
            record = self._record(trajectories, sums, hit_rate, t1 - t0, t2 - t1)
            if c["step"] % cfg.log_every == 0 or done:
                ckpt.append_log(self.out, record, METRICS)
                reporter.log(record)
                if self.progress is not None:
                    self.progress(record)
                if cfg.console:
                    line = (
                        f"agent-lm step {c['step']}: return {record['return']:.3f}  success "
                        f"{record['success_rate']:.2f}  kl {record['kl']:.4f}  len "
                        f"{record['episode_len']:.2f}  action tokens {record['action_tokens']}"
                    )
                    if reporter.bar is not None:
                        reporter.info(line)
                    else:
                        print(line, flush=True)
            reporter.advance(c["step"])
            if cfg.save_every and c["step"] % cfg.save_every == 0 and not done:
                self._save()
        reporter.close()
        self._save()

    def _rollout(self, step: int) -> tuple[list[Trajectory], float]:
        """The step's episodes and the engine's prefix hit rate over them."""
        cfg = self.cfg
        picked = pick_tasks(len(self.tasks), cfg.tasks_per_step, step, cfg.seed)
        n = len(picked) * cfg.group_size
        reset_seeds = group_seeds(len(picked), step, cfg.seed)
        sample_seeds = request_seeds(cfg.seed, step, n * cfg.max_turns)
        self.model.eval()
        engine = self.world_model.engine
        before = engine.call(lambda e: e.stats).result()  # type: ignore[attr-defined]
        trajectories = self.rollouts.run(
            [self.tasks[i] for i in picked], reset_seeds, sample_seeds, tag=f"agent{step}"
        )
        after = engine.call(lambda e: e.stats).result()  # type: ignore[attr-defined]
        queried = after.num_prompt_tokens - before.num_prompt_tokens
        cached = after.num_cached_tokens - before.num_cached_tokens
        return trajectories, cached / queried if queried else 0.0

    def _update(self, trajectories: list[Trajectory]) -> dict[str, float]:
        """One optimizer step on the episodes; returns loss and KL/clip/ratio token sums."""
        cfg, acc = self.cfg, self.acc
        returns = torch.tensor([t.episode_return for t in trajectories])
        advantages = grpo.group_advantages(returns, cfg.group_size)
        num_tokens = sum(t.num_action_tokens for t in trajectories)
        self.model.train()

        def loss_of(part: slice) -> grpo.LossParts:
            return grpo.micro_batch_loss(
                self.model, episode_batch(trajectories[part], self.pad_id, acc.device),
                advantages[part], logprobs_of=answer_logprobs, reference=self.reference,
                unwrapped=self.unwrapped, clip_eps=cfg.clip_eps, beta=cfg.beta,
                num_tokens=num_tokens,
            )

        sums = grpo.optimizer_step(acc, self.model, self.opt, len(trajectories), cfg.grad_accum,
                                   cfg.max_grad_norm, loss_of)
        sums["tokens"] = num_tokens
        # The cached KV came from the old weights: a new model version, a new hash salt.
        version = f"{cfg.seed}-agent-step{self.c['step'] + 1}"
        self.world_model.engine.call(lambda e: e.reset_prefix_cache(version)).result()  # type: ignore[attr-defined]
        return sums

    def _record(
        self,
        trajectories: list[Trajectory],
        sums: dict[str, float],
        hit_rate: float,
        rollout_s: float,
        update_s: float,
    ) -> dict[str, Any]:
        n, tokens = len(trajectories), int(sums["tokens"])
        returns = [t.episode_return for t in trajectories]
        mean = sum(returns) / n
        return {
            "step": self.c["step"],
            "loss": sums["loss"],
            "lr": self.opt.param_groups[0]["lr"],
            "return": mean,
            "return_std": math.sqrt(sum((r - mean) ** 2 for r in returns) / n),
            "success_rate": sum(t.succeeded for t in trajectories) / n,
            "kl": sums["kl"] / tokens,
            "clip_frac": sums["clipped"] / tokens,
            "ratio": sums["ratio"] / tokens,
            "episode_len": sum(t.num_turns for t in trajectories) / n,
            "action_tokens": tokens,
            "truncated": sum(t.status is not EpisodeStatus.TERMINATED for t in trajectories) / n,
            "parse_failures": sum(t.parse_failures for t in trajectories),
            "prefix_hit_rate": hit_rate,
            "rollout_s": round(rollout_s, 3),
            "update_s": round(update_s, 3),
            "tokens_per_s": tokens / max(rollout_s, 1e-9),
            "episodes": self.c["episodes"],
            "env_steps": self.c["env_steps"],
            "elapsed_s": round(self.c["elapsed_s"], 3),
        }

    def _save(self) -> None:
        is_lora = self.cfg.lora is not None
        ckpt.export_model(self.unwrapped, self.tokenizer, self.out, is_lora=is_lora)
        state = {**self.c, "stage": STAGE, "seed": self.cfg.seed}
        ckpt.save_state(self.acc, self.out, state)
