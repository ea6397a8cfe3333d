"""The ``rl`` stage: GRPO on real transitions with the hybrid fidelity reward.

Each optimizer step: take ``batch_size * grad_accum`` (history, action) prompts of real
transitions, sample ``group_size`` answers per prompt through the sim runtime's paged
engine running the very model being trained (prompt KV shared by the group, behaviour
log-probabilities from the engine), score them against the real next observation with
the reward plugin (``hybrid`` by default), normalise rewards within each group, and
take one clipped policy-gradient step with a k3 KL penalty to the frozen starting
model (:mod:`agentworld.trainers.training.grpo`). The engine's KV cache is then invalidated
(new model version as hash salt), since its keys and values came from the old weights.

The options, checks and data are here; the step is :class:`~agentworld.trainers.world_model.rl_loop.RlLoop`
on the GRPO loop shared with the LM agent trainer
(:class:`~agentworld.trainers.training.grpo_loop.GrpoLoop`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from accelerate import Accelerator
from pydantic import Field, field_validator, model_validator
from transformers import PreTrainedTokenizerBase

from agentworld.core import plugins
from agentworld.core.card import read_card
from agentworld.core.retrieval import TransitionIndex
from agentworld.core.types import Episode
from agentworld.trainers.models.specs import (
    TOKENIZER_FILES,
    ModelSpecError,
    has_tokenizer,
    is_checkpoint_dir,
)
from agentworld.trainers.training.base import BaseTrainer
from agentworld.trainers.training.config import TrainConfig
from agentworld.trainers.training.data import Sample
from agentworld.trainers.training.loop import TrainLoop
from agentworld.trainers.world_model.rl_data import RlPrompt, build_prompts, chat_render
from agentworld.trainers.world_model.rl_loop import RlLoop


#: Keys of the starting checkpoint's card the RL checkpoint's card keeps: how the simulator
#: renders requests (:func:`agentworld.sim.backends.hf.checkpoint_options`).
INHERITED = ("reasoning", "retrieval")


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

    ``packing`` is refused (one prompt per row): validation raises a
    :class:`~agentworld.trainers.training.config.ConfigError` naming it.
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

    @field_validator("packing")
    @classmethod
    def _no_packing(cls, value: bool) -> bool:
        """GRPO samples answers per prompt: the loop maps each sample of its data back to its
        prompt, which a packed row of several prompts is not (a bare ``KeyError`` at the first
        step, after the model loaded)."""
        if value:
            raise ValueError(
                "the rl stage does not pack sequences (GRPO samples a group of answers per "
                "prompt, one prompt per row); set packing = false, its default (packing = true "
                "is valid in the cpt and sft stages)"
            )
        return value

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

    Reuses :class:`~agentworld.trainers.training.base.BaseTrainer` for tokenizer, model (LoRA
    optional), accelerate, AdamW, schedule, checkpoints and resume; its step is
    :class:`~agentworld.trainers.world_model.rl_loop.RlLoop` (:meth:`make_loop`).
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

    def card(self, episodes: Sequence[Episode], cfg: TrainConfig) -> dict[str, Any]:
        """The base card, plus what the starting checkpoint's card says of the simulator
        (:data:`INHERITED`: domain rationales with their domain, the retrieval index), so the
        RL model is served as it was trained (its prompts were rendered so)."""
        card = super().card(episodes, cfg)
        start = read_card(cfg.model) if is_checkpoint_dir(cfg.model) else {}
        inherited = {k: start[k] for k in INHERITED if start.get(k) is not None}
        if "reasoning" in inherited and start.get("domain") is not None:
            inherited["domain"] = start["domain"]
        return card | inherited

    def samples(
        self, episodes: Sequence[Episode], tokenizer: PreTrainedTokenizerBase, cfg: TrainConfig
    ) -> list[Sample]:
        """One prompt-only sample per transition (drives epochs and length-bucketed batches);
        a starting checkpoint's retrieval index is copied to ``cfg.output_dir``."""
        assert isinstance(cfg, RlConfig)
        if not tokenizer.chat_template:
            raise ValueError("rl needs a tokenizer with a chat template (ChatML)")
        if is_checkpoint_dir(cfg.model) and read_card(cfg.model).get("retrieval"):
            TransitionIndex.load(cfg.model).save(cfg.output_dir)  # checked, written atomically
        budget = cfg.max_seq_len - cfg.max_new_tokens
        self._episodes = list(episodes)
        self._prompts = build_prompts(episodes, chat_render(tokenizer), budget, cfg.domain)
        data = [Sample(p.prompt_ids, [0] * len(p.prompt_ids)) for p in self._prompts]
        self._index = {id(s): i for i, s in enumerate(data)}
        return data


    def make_loop(
        self,
        acc: Accelerator,
        model: Any,
        opt: Any,
        tokenizer: Any,
        data: list[Sample],
        cfg: TrainConfig,
        out: Path,
        counters: dict[str, Any],
        total: int | None,
    ) -> TrainLoop:
        """The GRPO loop over this run's prompts (:class:`~agentworld.trainers.world_model.rl_loop.RlLoop`)."""
        assert isinstance(cfg, RlConfig)
        return RlLoop(
            acc, model, opt, tokenizer, cfg, out, counters, total, stage=self.name, data=data,
            prompts=self._prompts, index=self._index, episodes=self._episodes, reward=self._reward,
        )  # fmt: skip
