"""The ``rl`` stage: GRPO on real transitions with the hybrid fidelity reward.

Each optimizer step: take ``batch_size * grad_accum`` (history, action) prompts of real
transitions, sample ``group_size`` answers per prompt through the sim runtime's paged
engine running the very model being trained (prompt KV shared by the group, behaviour
log-probabilities from the engine), score them against the real next observation with
the reward plugin (``hybrid`` by default), normalise rewards within each group, and
take one clipped policy-gradient step with a k3 KL penalty to the frozen starting
model (:mod:`agentworld.trainers.training.grpo`). The engine's KV cache is then invalidated
(new model version as hash salt), since its keys and values came from the old weights.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch
from accelerate import Accelerator
from pydantic import Field, model_validator
from transformers import PreTrainedTokenizerBase

from agentworld.core import plugins
from agentworld.core.card import card_from_episodes
from agentworld.core.protocols import ComponentReward
from agentworld.core.types import Episode
from agentworld.trainers.training import checkpoint as ckpt
from agentworld.trainers.training import grpo
from agentworld.trainers.training.config import TrainConfig
from agentworld.trainers.training.data import Sample, batch_stream
from agentworld.trainers.training.loop import BaseTrainer, lr_factor, time_is_up
from agentworld.trainers.models.specs import (
    TOKENIZER_FILES,
    ModelSpecError,
    has_tokenizer,
    is_checkpoint_dir,
    load_model,
    num_parameters,
)
from agentworld.trainers.training.progress import Reporter
from agentworld.trainers.training.tracking import start_trackers
from agentworld.trainers.world_model.rl_data import (
    RlPrompt,
    Rollout,
    build_prompts,
    chat_render,
    generate_groups,
    request_seeds,
    reward_contexts,
)


class RlConfig(TrainConfig):
    """``rl`` stage options (GRPO). ``batch_size`` counts prompts per micro-batch.

    Attributes:
        group_size: Answers sampled per prompt ``G`` (>= 2: advantages are relative).
        max_new_tokens: Answer length limit (tokens).
        max_seq_len: Prompt plus answer (tokens); prompts are fitted into
            ``max_seq_len - max_new_tokens`` by dropping their oldest turns.
        temperature: Sampling temperature (> 0).
        top_p: Nucleus mass of the sampler.
        top_k: Top-k of the sampler (0 = off).
        clip_eps: PPO clip range of the importance ratio.
        beta: Weight of the k3 KL to the starting model (0: no reference model); TRL's name.
            ``kl_coef`` is accepted as a deprecated alias (older pipeline files).
        reward: Reward plugin name.
        reward_weights: Component weights of the ``hybrid`` reward (default: its own).
        reward_options: Other options of the reward's factory (``components``,
            ``deterministic_action_types`` for ``hybrid``).
        domain: Domain name given to rewards in their context (default: each episode's).
        engine_options: :class:`~agentworld.sim.engine.PagedEngine` options (``num_blocks``,
            ``block_size``, ``max_num_batched_tokens``, ...); by default the KV pool is sized
            to one step's rollouts.
    """

    lr: float = Field(1e-5, gt=0)
    batch_size: int = Field(4, ge=1)
    warmup_steps: int = Field(0, ge=0)
    log_every: int = Field(1, ge=1)
    max_seq_len: int = Field(1024, ge=8)
    group_size: int = Field(4, ge=2)
    max_new_tokens: int = Field(128, ge=1)
    temperature: float = Field(1.0, gt=0)
    top_p: float = Field(1.0, gt=0, le=1)
    top_k: int = Field(0, ge=0)
    clip_eps: float = Field(0.2, gt=0, lt=1)
    beta: float = Field(0.04, ge=0)
    reward: str = "hybrid"
    reward_weights: dict[str, float] | None = None
    reward_options: dict[str, Any] = Field(default_factory=dict)
    domain: str | None = None
    engine_options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _kl_coef_alias(cls, data: Any) -> Any:
        """``kl_coef`` (the old name of ``beta``) still works, with a ``DeprecationWarning``."""
        if isinstance(data, dict) and "kl_coef" in data:
            if "beta" in data:
                raise ValueError("give the KL weight once: beta (kl_coef is its deprecated alias)")
            warnings.warn("rl option kl_coef is deprecated; call it beta (TRL's name)",
                          DeprecationWarning, stacklevel=2)
            data = {("beta" if k == "kl_coef" else k): v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _lengths(self) -> RlConfig:
        if self.max_new_tokens >= self.max_seq_len:
            raise ValueError(
                f"max_new_tokens ({self.max_new_tokens}) must be below max_seq_len "
                f"({self.max_seq_len}) to leave room for the prompt"
            )
        return self


def build_reward(cfg: RlConfig) -> Any:
    """The reward plugin ``cfg.reward`` built with ``reward_options`` (and ``weights=reward_weights``).

    Raises:
        agentworld.core.plugins.UnknownPluginError: ``reward`` (or a hybrid component) is not installed.
        ValueError: weights that are negative or do not sum to a positive number, or
            ``reward_weights`` given to a reward other than ``hybrid``.
    """
    options = dict(cfg.reward_options)
    plugins.factory("reward", cfg.reward)  # UnknownPluginError naming the installed ones
    if cfg.reward_weights is not None:
        if cfg.reward != "hybrid":
            raise ValueError(
                f"reward_weights configure the 'hybrid' reward; reward {cfg.reward!r} takes none"
            )
        if sum(cfg.reward_weights.values()) <= 0:
            raise ValueError(
                f"reward_weights must sum to a positive number, got {cfg.reward_weights}"
            )
        options["weights"] = cfg.reward_weights
    return plugins.get_reward(cfg.reward, **options)


class RlTrainer(BaseTrainer):
    """``train(episodes, config) -> output_dir`` with :class:`RlConfig` options (GRPO).

    Reuses :class:`~agentworld.trainers.training.loop.BaseTrainer` for tokenizer, model (LoRA
    optional), accelerate, AdamW, schedule, checkpoints and resume; replaces its loop.
    ``train_log.jsonl`` records hold ``step, loss, lr, reward, reward_std,
    reward/<component>, kl, clip_frac, ratio, response_len (tokens), format_valid
    (fraction), prefix_hit_rate, rollout_s, tokens, tokens_per_s, elapsed_s``.
    """

    name: ClassVar[str] = "rl"
    config_cls: ClassVar[type[TrainConfig]] = RlConfig

    def __init__(self) -> None:
        self._reward: Any = None
        self._prompts: list[RlPrompt] = []
        self._index: dict[int, int] = {}
        self._episodes: list[Episode] = []

    def check(self, episodes: Sequence[Episode], cfg: TrainConfig) -> None:
        """Bad input fails here, before any model is loaded.

        Raises:
            ValueError: no episode has a step (no reference observation), bad reward weights.
            agentworld.core.plugins.UnknownPluginError: the reward (or a hybrid component)
                or ``domain`` is not installed.
            agentworld.trainers.models.specs.ModelSpecError: ``model`` is a directory without a
                tokenizer and no ``tokenizer`` is given.
        """
        super().check(episodes, cfg)
        assert isinstance(cfg, RlConfig)
        if not any(e.steps for e in episodes):
            raise ValueError(
                f"rl needs references: episodes with at least one step whose real next "
                f"observation the answers are scored against; none of the {len(episodes)} has one"
            )
        if cfg.domain is not None:
            plugins.get_domain(cfg.domain)
        if is_checkpoint_dir(cfg.model) and cfg.tokenizer is None and not has_tokenizer(cfg.model):
            raise ModelSpecError(
                f"model directory {cfg.model!r} has no tokenizer (none of "
                f"{', '.join(TOKENIZER_FILES)}); save one next to the model or set tokenizer=<dir>"
            )
        self._reward = build_reward(cfg)

    def samples(
        self, episodes: Sequence[Episode], tokenizer: PreTrainedTokenizerBase, cfg: TrainConfig
    ) -> list[Sample]:
        """One prompt-only sample per transition (drives epochs and length-bucketed batches)."""
        assert isinstance(cfg, RlConfig)
        if not tokenizer.chat_template:
            raise ValueError("rl needs a tokenizer with a chat template (ChatML)")
        budget = cfg.max_seq_len - cfg.max_new_tokens
        self._episodes = list(episodes)
        self._prompts = build_prompts(episodes, chat_render(tokenizer), budget, cfg.domain)
        data = [Sample(p.prompt_ids, [0] * len(p.prompt_ids)) for p in self._prompts]
        self._index = {id(s): i for i, s in enumerate(data)}
        return data

    def _loop(
        self,
        acc: Accelerator,
        model: Any,
        opt: Any,
        tokenizer: Any,
        data: list[Sample],
        cfg: TrainConfig,
        out: Path,
        c: dict[str, Any],
        total: int | None,
    ) -> None:
        assert isinstance(cfg, RlConfig)
        from agentworld.sim.backends.hf import HFWorldModel
        from agentworld.sim.sampling import SamplingParams

        unwrapped = acc.unwrap_model(model)
        lora = cfg.lora is not None
        policy = unwrapped.get_base_model() if lora else unwrapped  # LoRA layers live inside
        reference = None
        if cfg.beta > 0 and not lora:
            reference = _reference_model(cfg, tokenizer, acc.device)
        context = getattr(policy.config.get_text_config(), "max_position_embeddings", None)
        if context is not None and cfg.max_seq_len > context:
            if cfg.max_new_tokens >= context:
                raise ValueError(
                    f"max_new_tokens ({cfg.max_new_tokens}) leaves no room for a prompt in the "
                    f"model's {context}-token context"
                )
            # Refit the prompts into the model's window (same order: data indices still hold).
            self._prompts = build_prompts(
                self._episodes, chat_render(tokenizer), context - cfg.max_new_tokens, cfg.domain
            )
        world_model = HFWorldModel(
            policy,
            tokenizer,
            rewards=card_from_episodes(self._episodes)["rewards"],  # answers end with the footer
            max_new_tokens=cfg.max_new_tokens,
            engine="paged",
            engine_options=_engine_options(cfg, acc.num_processes),
        )
        params = SamplingParams(cfg.max_new_tokens, cfg.temperature, cfg.top_p, cfg.top_k)
        stream = batch_stream(
            data, cfg.batch_size, cfg.seed, c["micro"], acc.process_index, acc.num_processes
        )
        reporter = Reporter(cfg, total, start=c["step"], enabled=acc.is_main_process)
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        reporter.info(
            f"rl: {len(self._prompts)} prompts x {cfg.group_size} answers, "
            f"{num_parameters(model):,} parameters ({trainable:,} trainable), {total or '?'} steps"
        )
        start_trackers(acc, cfg.report_to, out, "agentworld-rl", cfg.model_dump(mode="json"))
        start, base_elapsed = time.perf_counter(), c["elapsed_s"]

        def finished() -> bool:  # the base loop's rule: every rank stops at the same step
            elapsed = base_elapsed + time.perf_counter() - start
            return time_is_up(acc, cfg.time_budget_s, elapsed) or (total is not None and c["step"] >= total)

        done = finished()
        while not done:
            t0 = time.perf_counter()
            elapsed = base_elapsed + t0 - start
            for group in opt.param_groups:
                group["lr"] = cfg.lr * lr_factor(cfg, c["step"], total, elapsed)
            indices = [self._index[id(s)] for _ in range(cfg.grad_accum) for s in next(stream)]
            c["micro"] += cfg.grad_accum
            model.eval()
            stats0 = world_model.engine.call(lambda e: e.stats).result()
            rollouts = generate_groups(
                world_model,
                self._prompts,
                indices,
                cfg.group_size,
                params,
                request_seeds(cfg.seed * 1000 + acc.process_index, c["step"], len(indices) * cfg.group_size),
                tag=f"step{c['step']}",
            )
            stats1 = world_model.engine.call(lambda e: e.stats).result()
            t_rollout = time.perf_counter() - t0
            record = self._score(rollouts)
            advantages = grpo.group_advantages(
                torch.tensor(record.pop("_rewards")), cfg.group_size
            )
            model.train()
            num_tokens = sum(len(r.token_ids) for r in rollouts)
            pad_id = _pad_id(tokenizer)

            def loss_of(part: slice) -> grpo.LossParts:
                return grpo.micro_batch_loss(
                    model, answer_batch(self._prompts, rollouts[part], pad_id, acc.device),
                    advantages[part], logprobs_of=answer_logprobs, reference=reference,
                    unwrapped=unwrapped, clip_eps=cfg.clip_eps, beta=cfg.beta,
                    num_tokens=num_tokens,
                )

            sums = grpo.optimizer_step(
                acc, model, opt, len(rollouts), cfg.grad_accum, cfg.max_grad_norm, loss_of
            )
            c["step"] += 1
            c["tokens"] += num_tokens * acc.num_processes
            # The cached KV was computed with the old weights: new model version, new salt.
            version = f"{cfg.seed}-step{c['step']}"
            world_model.engine.call(lambda e, v=version: e.reset_prefix_cache(v)).result()
            done = finished()
            now = time.perf_counter()
            queried = stats1.num_prompt_tokens - stats0.num_prompt_tokens
            cached = stats1.num_cached_tokens - stats0.num_cached_tokens
            record = {
                "step": c["step"],
                "loss": sums["loss"],
                "lr": opt.param_groups[0]["lr"],
                **record,
                "kl": sums["kl"] / num_tokens,
                "clip_frac": sums["clipped"] / num_tokens,
                "ratio": sums["ratio"] / num_tokens,
                "prefix_hit_rate": cached / queried if queried else 0.0,
                "rollout_s": round(t_rollout, 3),
                "tokens": c["tokens"],
                "tokens_per_s": num_tokens / max(now - t0, 1e-9),
                "elapsed_s": round(base_elapsed + now - start, 3),
            }
            if c["step"] % cfg.log_every == 0 or done:
                if acc.num_processes > 1:  # means over ranks, not rank 0's alone
                    keys = [k for k in ("loss", "reward", "kl", "clip_frac", "ratio")
                            if isinstance(record.get(k), int | float)]  # fmt: skip
                    local = torch.tensor([record[k] for k in keys], dtype=torch.float64,
                                         device=acc.device)  # fmt: skip
                    record.update(zip(keys, acc.reduce(local, reduction="mean").tolist()))
                if acc.is_main_process:
                    ckpt.append_log(out, record)
                    if cfg.report_to:
                        acc.log(record, step=c["step"])
                reporter.log(record)
                reporter.info(
                    f"step {c['step']}: reward {record['reward']:.3f}  kl {record['kl']:.4f}  "
                    f"len {record['response_len']:.1f}  format {record['format_valid']:.2f}"
                )
            reporter.advance(c["step"])
            if cfg.save_every and c["step"] % cfg.save_every == 0 and not done:
                self._save(acc, model, tokenizer, cfg, out, c, start, base_elapsed)
        reporter.close()
        if cfg.report_to:
            acc.end_training()
        self._save(acc, model, tokenizer, cfg, out, c, start, base_elapsed)

    def _score(self, rollouts: list[Rollout]) -> dict[str, Any]:
        """Reward metrics of a step's rollouts; ``"_rewards"`` holds the ``[n]`` rewards."""
        preds = [r.prediction for r in rollouts]
        refs = [self._prompts[r.prompt].reference for r in rollouts]
        contexts = reward_contexts(self._prompts, rollouts)
        components: dict[str, list[float | None]] = {}
        if isinstance(self._reward, ComponentReward):
            result = self._reward.evaluate(preds, refs, contexts)
            scores, components = list(result.scores), result.components
        else:
            scores = [float(s) for s in self._reward(preds, refs, contexts)]
        if len(scores) != len(rollouts):
            raise ValueError(f"reward returned {len(scores)} scores for {len(rollouts)} answers")
        n = len(scores)
        mean = sum(scores) / n
        record: dict[str, Any] = {
            "reward": mean,
            "reward_std": math.sqrt(sum((s - mean) ** 2 for s in scores) / n),
        }
        for name, column in components.items():
            ran = [s for s in column if s is not None]
            if ran:
                record[f"reward/{name}"] = sum(ran) / len(ran)
        record["response_len"] = sum(len(r.token_ids) for r in rollouts) / n
        record["format_valid"] = sum(r.prediction is not None for r in rollouts) / n
        record["_rewards"] = scores
        return record


def answer_batch(
    prompts: Sequence[RlPrompt], rollouts: Sequence[Rollout], pad_id: int, device: torch.device
) -> dict[str, torch.Tensor]:
    """Right-padded ``prompt + answer`` rows of a micro-batch.

    Returns:
        ``input_ids [n, width]``; ``answer [n, K]`` answer ids (``K`` = longest answer,
        padded); ``mask [n, K]`` 1 on generated tokens, 0 on padding; ``old_logprobs [n, K]``
        behaviour log-probabilities; ``positions [n, K]`` the position whose logits predict
        each answer token (``prompt_len - 1 + t``, clamped into the row).
    """
    n = len(rollouts)
    k = max(len(r.token_ids) for r in rollouts)
    width = max(len(prompts[r.prompt].prompt_ids) + len(r.token_ids) for r in rollouts)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    answer = torch.full((n, k), pad_id, dtype=torch.long)
    mask = torch.zeros(n, k)
    old = torch.zeros(n, k)
    positions = torch.zeros(n, k, dtype=torch.long)
    for row, r in enumerate(rollouts):
        prompt = prompts[r.prompt].prompt_ids
        seq = prompt + r.token_ids
        ids[row, : len(seq)] = torch.tensor(seq)
        answer[row, : len(r.token_ids)] = torch.tensor(r.token_ids)
        mask[row, : len(r.token_ids)] = 1
        old[row, : len(r.logprobs)] = torch.tensor(r.logprobs)
        positions[row] = (len(prompt) - 1 + torch.arange(k)).clamp(max=width - 1)
    out = {"input_ids": ids, "answer": answer, "mask": mask, "old_logprobs": old, "positions": positions}
    return {key: value.to(device) for key, value in out.items()}


def answer_logprobs(model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Log-probabilities ``[n, K]`` of each row's answer tokens under ``model``.

    Rows are right-padded, so the causal mask alone is correct (padding only follows real
    tokens). The LM head runs only on ``batch["positions"]`` (``logits_to_keep`` as a 2D
    position index, ``transformers.modeling_utils.slice_logits_to_keep``). Padded answer
    slots hold meaningless values: mask them with ``batch["mask"]``.
    """
    logits = model(
        input_ids=batch["input_ids"], use_cache=False, logits_to_keep=batch["positions"]
    ).logits
    return grpo.token_logprobs(logits, batch["answer"])


def _pad_id(tokenizer: Any) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def _engine_options(cfg: RlConfig, num_processes: int) -> dict[str, Any]:
    """KV pool sized for one step: every answer plus every prompt's parent, at most
    ``max_seq_len`` tokens each (options in ``cfg.engine_options`` win)."""
    block = int(cfg.engine_options.get("block_size", 16))
    prompts = cfg.batch_size * cfg.grad_accum
    per_seq = -(-cfg.max_seq_len // block) + 1
    options: dict[str, Any] = {
        "num_blocks": prompts * (cfg.group_size + 1) * per_seq + 8,
        "max_num_batched_tokens": max(512, cfg.max_seq_len),
    }
    return options | dict(cfg.engine_options)


def _reference_model(cfg: RlConfig, tokenizer: Any, device: torch.device) -> Any:
    """The frozen starting model: ``cfg.model`` loaded again (a preset is rebuilt with the
    run's seed, giving the very weights training started from). Torch's RNG is left as is."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        reference, _ = load_model(cfg.model, tokenizer, allow_hub=cfg.allow_hub)
    reference.to(device).eval().requires_grad_(False)
    return reference
