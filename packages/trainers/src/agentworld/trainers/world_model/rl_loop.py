"""The ``rl`` stage's GRPO step: answers to real-transition prompts, scored by the reward plugin.

Each optimizer step takes ``batch_size * grad_accum`` (history, action) prompts, samples
``group_size`` answers per prompt (prompt KV shared by the group, behaviour log-probabilities
from the engine) and scores them against the real next observation with the reward plugin;
the update is the shared :class:`~agentworld.trainers.training.grpo_loop.GrpoLoop`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from agentworld.core.card import card_from_episodes
from agentworld.core.protocols import ComponentReward
from agentworld.core.types import Episode
from agentworld.trainers.models.specs import is_checkpoint_dir, num_parameters
from agentworld.trainers.training.data import Sample, batch_stream
from agentworld.trainers.training.grpo_loop import GrpoLoop, GrpoStep
from agentworld.trainers.world_model.rl_data import (
    RlPrompt,
    Rollout,
    build_prompts,
    chat_render,
    generate_groups,
    request_seeds,
    reward_contexts,
)


class RlLoop(GrpoLoop):
    """GRPO on ``prompts`` (one :class:`~agentworld.trainers.training.data.Sample` per prompt
    in ``data``, ``index`` mapping a sample's ``id`` to its prompt) with ``reward``."""

    rank_mean_keys = ("loss", "reward", "kl", "clip_frac", "ratio")

    def __init__(
        self,
        *args: Any,
        data: list[Sample],
        prompts: list[RlPrompt],
        index: dict[int, int],
        episodes: list[Episode],
        reward: Any,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        from agentworld.sim.backends.hf import HFWorldModel, checkpoint_options
        from agentworld.sim.sampling import SamplingParams

        acc, cfg, c = self.acc, self.cfg, self.c
        self.index, self.reward = index, reward
        context = self.context_length()
        if context is not None and cfg.max_new_tokens >= context:
            raise ValueError(
                f"max_new_tokens ({cfg.max_new_tokens}) leaves no room for a prompt in the "
                f"model's {context}-token context"
            )
        # the simulator's options from the starting checkpoint's card (rationales, retrieval,
        # history window), so the prompts are what evaluation and serving will send
        options = (checkpoint_options(cfg.model, self.tokenizer, {})
                   if is_checkpoint_dir(cfg.model) else {})
        options["rewards"] = card_from_episodes(episodes)["rewards"]  # answers end with the footer
        self.world_model = HFWorldModel(
            self.policy,
            self.tokenizer,
            max_new_tokens=cfg.max_new_tokens,
            engine="paged",
            engine_options=engine_options(cfg, acc.num_processes),
            **options,
        )
        # Refit the prompts (same order: data indices still hold) into the model's window.
        budget = min(cfg.max_seq_len, context or cfg.max_seq_len) - cfg.max_new_tokens
        self.prompts = build_prompts(episodes, chat_render(self.tokenizer), budget, cfg.domain,
                                     codec=self.world_model)
        assert len(self.prompts) == len(prompts)
        self.engine = self.world_model.engine
        self.params = SamplingParams(cfg.max_new_tokens, cfg.temperature, cfg.top_p, cfg.top_k)
        self.stream = batch_stream(
            data, cfg.batch_size, cfg.seed, c["micro"], acc.process_index, acc.num_processes
        )
        tok = self.tokenizer
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id

    def describe(self) -> str:
        trainable = sum(p.numel() for p in self.model.parameters() if p.requires_grad)
        return (
            f"rl: {len(self.prompts)} prompts x {self.cfg.group_size} answers, "
            f"{num_parameters(self.model):,} parameters ({trainable:,} trainable), "
            f"{self.total or '?'} steps"
        )

    def generate(self) -> list[Rollout]:
        acc, cfg, c = self.acc, self.cfg, self.c
        indices = [self.index[id(s)] for _ in range(cfg.grad_accum) for s in next(self.stream)]
        c["micro"] += cfg.grad_accum
        seeds = request_seeds(
            cfg.seed * 1000 + acc.process_index, c["step"], len(indices) * cfg.group_size
        )
        return generate_groups(
            self.world_model, self.prompts, indices, cfg.group_size, self.params, seeds,
            tag=f"step{c['step']}",
        )  # fmt: skip

    def score(self, rows: list[Rollout]) -> tuple[list[float], dict[str, Any]]:
        """Rewards of the step's answers and their metrics (``reward``, ``reward_std``,
        ``reward/<component>``, ``response_len``, ``format_valid``)."""
        preds = [r.prediction for r in rows]
        refs = [self.prompts[r.prompt].reference for r in rows]
        contexts = reward_contexts(self.prompts, rows)
        components: dict[str, list[float | None]] = {}
        if isinstance(self.reward, ComponentReward):
            result = self.reward.evaluate(preds, refs, contexts)
            scores, components = list(result.scores), result.components
        else:
            scores = [float(s) for s in self.reward(preds, refs, contexts)]
        if len(scores) != len(rows):
            raise ValueError(f"reward returned {len(scores)} scores for {len(rows)} answers")
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
        record["response_len"] = sum(len(r.token_ids) for r in rows) / n
        record["format_valid"] = sum(r.prediction is not None for r in rows) / n
        return scores, record

    def num_tokens(self, rows: list[Rollout]) -> int:
        return sum(len(r.token_ids) for r in rows)

    def batch(self, rows: list[Rollout]) -> dict[str, torch.Tensor]:
        return answer_batch(self.prompts, rows, self.pad_id, self.acc.device)

    def metrics(self, step: GrpoStep) -> dict[str, Any]:
        self.c["tokens"] += step.num_tokens * self.acc.num_processes
        seconds = step.rollout_s + step.update_s
        return {
            "loss": step.sums["loss"],
            **step.info,
            **step.per_token(),
            "prefix_hit_rate": step.hit_rate,
            "rollout_s": round(step.rollout_s, 3),
            "tokens": self.c["tokens"],
            "tokens_per_s": step.num_tokens / max(seconds, 1e-9),
        }

    def on_log(self, record: dict[str, Any]) -> None:
        assert self.reporter is not None
        self.reporter.info(
            f"step {record['step']}: reward {record['reward']:.3f}  kl {record['kl']:.4f}  "
            f"len {record['response_len']:.1f}  format {record['format_valid']:.2f}"
        )


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


def engine_options(cfg: Any, num_processes: int) -> dict[str, Any]:
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
