"""GRPO arithmetic: group-normalised advantages, token log-probabilities, the clipped loss with KL.

Group Relative Policy Optimization (Shao et al. 2024, "DeepSeekMath", arXiv 2402.03300,
section 4.1): each prompt is answered ``G`` times; the advantage of answer ``i`` is its
reward normalised within its group, ``A_i = (r_i - mean(r)) / max(std(r), eps)``, shared by
all its tokens. The policy loss is PPO's clipped surrogate (Schulman et al. 2017,
arXiv 1707.06347) on the ratio of current to behaviour token probabilities, plus
``beta`` times the k3 estimator of ``KL(pi || pi_ref)`` per token,
``exp(ref - logp) - (ref - logp) - 1`` (J. Schulman, "Approximating KL Divergence",
http://joschu.net/blog/kl-approx.html), unbiased and always >= 0.

:func:`micro_batch_loss` and :func:`optimizer_step` are the one GRPO update used by both the
world-model ``rl`` stage and the LM agent trainer. The KL weight is called ``beta``
everywhere, as in TRL's ``GRPOConfig``.

The loss is token-level: summed over every generated token of the optimizer step and
divided by their count (so long answers weigh by their tokens, as in DAPO, arXiv
2503.14476), rather than averaged per answer first.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch


def group_advantages(rewards: torch.Tensor, group_size: int, eps: float = 1e-4) -> torch.Tensor:
    """``(r - group mean) / max(group std, eps)`` for consecutive groups of ``group_size``.

    The std is the population one (``ddof=0``), floored at ``eps``. A group whose rewards
    are all equal (their spread at most ``1e-6`` times ``max(1, |mean|)``, so fp32 rounding
    of the mean does not count as a preference) gets advantages of exactly 0: it carries no
    preference.

    Args:
        rewards: ``[num_prompts * group_size]`` rewards, grouped consecutively.
        group_size: Answers per prompt ``G`` (>= 1).
        eps: Floor of the std (reward units).

    Returns:
        ``[num_prompts * group_size]`` advantages (fp32).

    Raises:
        ValueError: ``rewards`` does not split into groups of ``group_size``.
    """
    if group_size < 1 or rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {group_size}")
    grouped = rewards.float().view(-1, group_size)
    mean = grouped.mean(dim=1, keepdim=True)
    std = grouped.std(dim=1, keepdim=True, unbiased=False)
    spread = grouped.amax(dim=1, keepdim=True) - grouped.amin(dim=1, keepdim=True)
    equal = spread <= 1e-6 * mean.abs().clamp_min(1.0)
    adv = (grouped - mean) / std.clamp_min(eps)
    return torch.where(equal, torch.zeros_like(adv), adv).flatten()


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """``log softmax(logits)[token]`` per position, without materialising the log-softmax.

    Args:
        logits: ``[batch, seq_len, vocab]`` raw logits (temperature 1, as the engine's
            ``logprobs``).
        tokens: ``[batch, seq_len]`` the token taken at each position.

    Returns:
        ``[batch, seq_len]`` fp32 natural-log probabilities.
    """
    logits = logits.float()
    picked = logits.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def k3_kl(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of ``KL(pi || pi_ref)``: ``exp(d) - d - 1`` with ``d = ref - logp``.

    Source: J. Schulman, "Approximating KL Divergence" (2020). Same shape as the inputs, >= 0.
    """
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1


@dataclass(slots=True)
class LossParts:
    """One micro-batch's GRPO loss and the sums behind its metrics.

    Attributes:
        loss: Scalar to backpropagate: the token sum of the per-token loss divided by the
            ``num_tokens`` of the whole optimizer step.
        kl_sum: Sum of the per-token k3 KL over the micro-batch's generated tokens.
        clipped_sum: Generated tokens whose ratio was clipped (count).
        ratio_sum: Sum of the importance ratios (their mean is ~1 on fresh rollouts).
    """

    loss: torch.Tensor
    kl_sum: float
    clipped_sum: float
    ratio_sum: float


def grpo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_eps: float,
    beta: float,
    num_tokens: int,
) -> LossParts:
    """Token-level clipped policy-gradient loss with a k3 KL penalty (module docstring).

    ``loss = sum_t mask * (-min(rho * A, clip(rho, 1 - eps, 1 + eps) * A) + beta * k3) / num_tokens``
    with ``rho = exp(logp - old_logp)``.

    Args:
        logprobs: ``[batch, seq_len]`` current policy log-probabilities (with grad).
        old_logprobs: ``[batch, seq_len]`` behaviour policy log-probabilities (the sampler's).
        ref_logprobs: ``[batch, seq_len]`` reference model log-probabilities, or ``None``
            (no KL term, ``beta`` ignored).
        advantages: ``[batch]`` one advantage per answer.
        mask: ``[batch, seq_len]`` 1 on generated tokens, 0 on padding.
        clip_eps: PPO clip range ``eps``.
        beta: KL coefficient.
        num_tokens: Generated tokens of the whole optimizer step (normaliser, > 0).

    Returns:
        :class:`LossParts`.
    """
    assert num_tokens > 0, "the optimizer step has no generated token"
    mask = mask.to(logprobs.dtype)
    ratio = torch.exp(logprobs - old_logprobs)
    adv = advantages[:, None].to(logprobs.dtype)
    unclipped = ratio * adv
    clipped = ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv
    per_token = -torch.minimum(unclipped, clipped)
    kl = torch.zeros_like(per_token)
    if ref_logprobs is not None:
        kl = k3_kl(logprobs, ref_logprobs)
        per_token = per_token + beta * kl
    loss = (per_token * mask).sum() / num_tokens
    was_clipped = ((ratio < 1 - clip_eps) | (ratio > 1 + clip_eps)).to(mask.dtype)
    return LossParts(
        loss=loss,
        kl_sum=float((kl.detach() * mask).sum()),
        clipped_sum=float((was_clipped * mask).sum()),
        ratio_sum=float((ratio.detach() * mask).sum()),
    )


# -- one optimizer step, shared by the world-model ``rl`` stage and the LM agent trainer ---------


def micro_batch_loss(
    model: Any,
    batch: dict[str, torch.Tensor],
    advantages: torch.Tensor,
    *,
    logprobs_of: Callable[[Any, dict[str, torch.Tensor]], torch.Tensor],
    reference: Any,
    unwrapped: Any,
    clip_eps: float,
    beta: float,
    num_tokens: int,
) -> LossParts:
    """:func:`grpo_loss` of one micro-batch, with the reference log-probabilities it needs.

    The reference is ``reference`` (a frozen copy of the starting model) or, when it is
    ``None`` (LoRA), the base model: ``unwrapped`` with its adapters disabled. No reference is
    run when ``beta`` is 0.

    Args:
        model: The policy being trained (as prepared by accelerate).
        batch: Right-padded rows with ``old_logprobs`` and ``mask`` ``[batch, seq_len]`` and
            whatever ``logprobs_of`` reads.
        advantages: ``[batch]`` one advantage per row.
        logprobs_of: ``(model, batch) -> [batch, seq_len]`` log-probabilities of the taken
            tokens (e.g. :func:`agentworld.trainers.training.grpo_loop.answer_logprobs`).
        reference: Reference model, or ``None``.
        unwrapped: The policy without accelerate's wrapper (a peft model under LoRA).
        clip_eps: PPO clip range.
        beta: KL coefficient (the ``beta`` of TRL's ``GRPOConfig``).
        num_tokens: Generated tokens of the whole optimizer step.
    """
    logprobs = logprobs_of(model, batch)
    ref_logprobs = None
    if beta > 0:
        with torch.no_grad():
            if reference is not None:
                ref_logprobs = logprobs_of(reference, batch)
            else:  # LoRA: the base model is the reference
                with unwrapped.disable_adapter():
                    ref_logprobs = logprobs_of(model, batch)
    return grpo_loss(
        logprobs,
        batch["old_logprobs"],
        ref_logprobs,
        advantages.to(logprobs.device),
        batch["mask"],
        clip_eps=clip_eps,
        beta=beta,
        num_tokens=num_tokens,
    )


def optimizer_step(
    acc: Any,
    model: Any,
    opt: Any,
    num_items: int,
    grad_accum: int,
    max_grad_norm: float,
    loss_of: Callable[[slice], LossParts],
) -> dict[str, float]:
    """One GRPO optimizer step over ``num_items`` rows in ``grad_accum`` micro-batches.

    Gradients are synchronised across ranks on the last micro-batch only
    (``accelerator.no_sync`` before it), then clipped to ``max_grad_norm``.

    Args:
        acc: The ``accelerate.Accelerator``.
        model: The prepared policy.
        opt: Its optimizer.
        num_items: Rows of the step (answers or episodes).
        grad_accum: Micro-batches per step (rows are split as evenly as they go).
        max_grad_norm: Gradient clipping norm.
        loss_of: ``rows -> LossParts`` of one micro-batch (:func:`micro_batch_loss`).

    Returns:
        Sums over the step: ``loss`` and the ``kl``, ``clipped`` and ``ratio`` token sums.
    """
    sums = {"loss": 0.0, "kl": 0.0, "clipped": 0.0, "ratio": 0.0}
    bounds = [round(m * num_items / grad_accum) for m in range(grad_accum + 1)]
    for m in range(grad_accum):
        sync = nullcontext() if m == grad_accum - 1 else acc.no_sync(model)
        with sync:
            parts = loss_of(slice(bounds[m], bounds[m + 1]))
            acc.backward(parts.loss)
        sums["loss"] += parts.loss.item()
        sums["kl"] += parts.kl_sum
        sums["clipped"] += parts.clipped_sum
        sums["ratio"] += parts.ratio_sum
    acc.clip_grad_norm_(model.parameters(), max_grad_norm)
    opt.step()
    opt.zero_grad()
    return sums
