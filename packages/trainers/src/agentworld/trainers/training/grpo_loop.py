"""The GRPO training step shared by the world-model ``rl`` stage and the LM agent trainer.

Each step (:meth:`GrpoLoop.training_step`): sample a step's rows (answers or episodes,
``group_size`` consecutive rows per prompt or task) through the sim runtime's paged engine
running the very policy being trained (:meth:`GrpoLoop.generate`), score them
(:meth:`GrpoLoop.score`), normalise the rewards within each group and take one clipped
policy-gradient step with a k3 KL penalty to the frozen starting policy
(:mod:`agentworld.trainers.training.grpo`, Shao et al. 2024, arXiv 2402.03300). The engine's
KV cache is then invalidated with a new model version as hash salt, since its keys and
values came from the old weights.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from agentworld.trainers.models.specs import load_model
from agentworld.trainers.training import grpo
from agentworld.trainers.training.loop import TrainLoop


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


def reference_model(cfg: Any, tokenizer: Any, device: torch.device) -> Any:
    """The frozen starting model: ``cfg.model`` loaded again (a preset is rebuilt with the
    run's ``cfg.seed``, giving the very weights training started from). Torch's RNG is left
    as is."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        reference, _ = load_model(cfg.model, tokenizer, allow_hub=cfg.allow_hub)
    reference.to(device).eval().requires_grad_(False)
    return reference


@dataclass
class GrpoStep:
    """What one GRPO step measured, for the stage's record (:meth:`GrpoLoop.metrics`).

    Attributes:
        rows: The step's answers or episodes, ``group_size`` consecutive rows per group.
        rewards: One reward per row.
        info: What :meth:`GrpoLoop.score` reported besides the rewards.
        num_tokens: Generated (trained) tokens of the step.
        sums: :func:`~agentworld.trainers.training.grpo.optimizer_step`'s ``loss`` and token
            sums of ``kl``, ``clipped`` and ``ratio``.
        hit_rate: The engine's prefix-cache hit rate over the step's prompts (0..1).
        rollout_s: Seconds spent sampling.
        update_s: Seconds spent scoring and updating.
    """

    rows: list[Any]
    rewards: list[float]
    info: dict[str, Any] = field(default_factory=dict)
    num_tokens: int = 0
    sums: dict[str, float] = field(default_factory=dict)
    hit_rate: float = 0.0
    rollout_s: float = 0.0
    update_s: float = 0.0

    def per_token(self) -> dict[str, float]:
        """``kl``, ``clip_frac`` and ``ratio``: the token sums divided by ``num_tokens``."""
        n = self.num_tokens
        return {"kl": self.sums["kl"] / n, "clip_frac": self.sums["clipped"] / n,
                "ratio": self.sums["ratio"] / n}  # fmt: skip


class GrpoLoop(TrainLoop):
    """A :class:`~agentworld.trainers.training.loop.TrainLoop` whose step is GRPO.

    A stage sets :attr:`engine` (a ``PagedEngine`` serving :attr:`policy`) and implements
    :meth:`generate`, :meth:`score`, :meth:`batch` and :meth:`metrics`. ``cfg`` needs
    ``group_size``, ``beta``, ``clip_eps``, ``grad_accum``, ``max_grad_norm``.
    """

    #: The engine's model-version salt after step ``n`` is ``f"{seed}-{version_prefix}{n}"``.
    version_prefix = "step"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cfg = self.cfg
        lora = cfg.lora is not None
        self.policy = self.unwrapped.get_base_model() if lora else self.unwrapped  # LoRA layers live inside
        self.reference = None
        if cfg.beta > 0 and not lora:  # under LoRA the base model (adapters off) is the reference
            self.reference = reference_model(cfg, self.tokenizer, self.acc.device)
        self.engine: Any = None

    def context_length(self) -> int | None:
        """The policy's context window (tokens), ``None`` when its config has none."""
        return getattr(self.policy.config.get_text_config(), "max_position_embeddings", None)

    # -- hooks ----------------------------------------------------------------------------

    def generate(self) -> list[Any]:
        """Sample the step's rows with :attr:`engine` (the model is in eval mode)."""
        raise NotImplementedError

    def score(self, rows: list[Any]) -> tuple[list[float], dict[str, Any]]:
        """``(one reward per row, other metrics of the rows)``."""
        raise NotImplementedError

    def num_tokens(self, rows: list[Any]) -> int:
        """Generated tokens of ``rows`` (the loss normaliser)."""
        raise NotImplementedError

    def batch(self, rows: list[Any]) -> dict[str, torch.Tensor]:
        """A micro-batch for :func:`answer_logprobs` with ``old_logprobs`` and ``mask``."""
        raise NotImplementedError

    def metrics(self, step: GrpoStep) -> dict[str, Any]:
        """The step's metrics (``loss`` first) from what it measured."""
        raise NotImplementedError

    # -- the step -------------------------------------------------------------------------

    def _engine_stats(self) -> Any:
        """The engine's counters (``EngineLoop.stats()``)."""
        return self.engine.stats()

    def _new_model_version(self, salt: str) -> None:
        """Drop the engine's prefix cache, ``salt`` the new model version
        (``EngineLoop.reset_prefix_cache``)."""
        self.engine.reset_prefix_cache(salt)

    def training_step(self) -> dict[str, Any]:
        cfg, acc = self.cfg, self.acc
        t0 = time.perf_counter()
        self.model.eval()
        before = self._engine_stats()
        rows = self.generate()
        after = self._engine_stats()
        rollout_s = time.perf_counter() - t0
        queried = after.num_prompt_tokens - before.num_prompt_tokens
        cached = after.num_cached_tokens - before.num_cached_tokens
        rewards, info = self.score(rows)
        advantages = grpo.group_advantages(torch.tensor(rewards), cfg.group_size)
        num_tokens = self.num_tokens(rows)
        self.model.train()

        def loss_of(part: slice) -> grpo.LossParts:
            return grpo.micro_batch_loss(
                self.model, self.batch(rows[part]), advantages[part],
                logprobs_of=answer_logprobs, reference=self.reference, unwrapped=self.unwrapped,
                clip_eps=cfg.clip_eps, beta=cfg.beta, num_tokens=num_tokens,
            )  # fmt: skip

        sums = grpo.optimizer_step(
            acc, self.model, self.opt, len(rows), cfg.grad_accum, cfg.max_grad_norm, loss_of
        )
        # The cached KV was computed with the old weights: new model version, new salt.
        self._new_model_version(f"{cfg.seed}-{self.version_prefix}{self.c['step'] + 1}")
        return self.metrics(
            GrpoStep(
                rows, rewards, info, num_tokens, sums,
                hit_rate=cached / queried if queried else 0.0,
                rollout_s=rollout_s, update_s=time.perf_counter() - t0 - rollout_s,
            )  # fmt: skip
        )
