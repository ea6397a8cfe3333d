"""Sampling parameters and the next-token samplers shared by generation engines.

:func:`sample` applies one :class:`SamplingParams` to a whole batch;
:func:`sample_rows` gives every row its own parameters and random generator (the
paged engine's continuous batches mix requests) and also returns the raw
log-probabilities of the sampled tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """How to pick next tokens.

    Attributes:
        max_new_tokens: Most tokens generated per request (tokens, > 0).
        temperature: Softmax temperature; ``0`` means greedy (argmax).
        top_p: Nucleus sampling mass in ``(0, 1]``; ``1`` keeps the whole distribution.
        top_k: Keep only the ``top_k`` most likely tokens; ``0`` keeps all.
        seed: Seed of the request's own generator, so its samples do not depend on the
            other requests in its batch; ``None``: the engine's (or torch's global) generator.
        stop: Stop strings; generation ends once the decoded output contains one.
        logprobs: Return the log-probability of each sampled token.
    """

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    logprobs: bool = False

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 disables it), got {self.top_k}")
        if isinstance(self.stop, str):
            raise ValueError(f"stop must be a sequence of strings, got the string {self.stop!r}")
        object.__setattr__(self, "stop", tuple(self.stop))
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ValueError(f"stop strings must be non-empty strings, got {self.stop!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0 or self.top_k == 1


def make_generator(
    params: SamplingParams, device: torch.device | str = "cpu"
) -> torch.Generator | None:
    """A generator seeded with ``params.seed`` on ``device``, or ``None`` without a seed."""
    if params.seed is None:
        return None
    return torch.Generator(device=device).manual_seed(params.seed)


def filtered_probs(
    logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor
) -> torch.Tensor:
    """Next-token probabilities after temperature, top-k and top-p, in vocabulary order.

    Top-k keeps the ``k`` largest logits (``k = 0``: all); top-p then keeps the smallest
    set of most likely tokens whose mass reaches ``p`` (Holtzman et al. 2020, "The Curious
    Case of Neural Text Degeneration"); the most likely token always stays. Ties at the
    boundary are broken by sort order.

    Args:
        logits: ``[n, vocab]`` raw logits.
        temperature: ``[n]`` temperatures, > 0.
        top_k: ``[n]`` long, ``0`` disables.
        top_p: ``[n]`` in ``(0, 1]``.

    Returns:
        ``[n, vocab]`` fp32 probabilities, rows summing to 1.
    """
    scaled = logits.float() / temperature[:, None]
    if bool((top_k == 0).all()) and bool((top_p >= 1).all()):
        return torch.softmax(scaled, dim=-1)
    sorted_logits, order = scaled.sort(dim=-1, descending=True)
    rank = torch.arange(scaled.shape[-1], device=scaled.device)
    k = torch.where(top_k > 0, top_k, scaled.shape[-1])
    sorted_logits = sorted_logits.masked_fill(rank[None, :] >= k[:, None], float("-inf"))
    sorted_probs = torch.softmax(sorted_logits, dim=-1)
    # Drop a token once the mass before it reaches top_p.
    drop = sorted_probs.cumsum(dim=-1) - sorted_probs >= top_p[:, None]
    sorted_probs = sorted_probs.masked_fill(drop, 0.0)
    sorted_probs = sorted_probs / sorted_probs.sum(dim=-1, keepdim=True)
    return torch.zeros_like(sorted_probs).scatter_(-1, order, sorted_probs)


def sample(
    logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Next token ids ``[batch]`` from last-position logits ``[batch, vocab]``.

    All rows share ``params`` and draw from ``generator`` (``None``: torch's global one)
    in one ``torch.multinomial`` call.
    """
    if params.greedy:
        return logits.argmax(dim=-1)
    n, device = logits.shape[0], logits.device
    probs = filtered_probs(
        logits,
        torch.full((n,), params.temperature, device=device),
        torch.full((n,), params.top_k, dtype=torch.long, device=device),
        torch.full((n,), params.top_p, device=device),
    )
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def sample_rows(
    logits: torch.Tensor,
    params: Sequence[SamplingParams],
    generators: Sequence[torch.Generator | None],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Next tokens of rows that each have their own sampling parameters and generator.

    Greedy rows take the argmax. A sampled row with a generator draws from it alone, so
    its tokens do not depend on its batch neighbours; rows without one draw together
    from torch's global generator.

    Args:
        logits: ``[n, vocab]`` last-position logits, one row per request.
        params: ``n`` sampling parameters.
        generators: ``n`` generators (on ``logits.device``) or ``None``.

    Returns:
        ``(tokens [n] long, logprobs [n] fp32)``: the sampled ids and their log-probability
        under the model's raw distribution, ``log_softmax(logits)`` before temperature and
        filtering (vLLM's default "raw logprobs").

    Raises:
        ValueError: ``params`` or ``generators`` do not have one entry per row.
    """
    n = logits.shape[0]
    if len(params) != n or len(generators) != n:
        raise ValueError(
            f"need one params and one generator per row: {n} rows, "
            f"{len(params)} params, {len(generators)} generators"
        )
    tokens = logits.argmax(dim=-1)
    rows = [i for i, p in enumerate(params) if not p.greedy]
    if rows:
        device = logits.device
        index = torch.tensor(rows, device=device)
        probs = filtered_probs(
            logits.index_select(0, index),
            torch.tensor([params[i].temperature for i in rows], device=device),
            torch.tensor([params[i].top_k for i in rows], dtype=torch.long, device=device),
            torch.tensor([params[i].top_p for i in rows], device=device),
        )
        sampled = torch.empty(len(rows), dtype=torch.long, device=device)
        shared = [j for j, i in enumerate(rows) if generators[i] is None]
        if shared:
            at = torch.tensor(shared, device=device)
            sampled[at] = torch.multinomial(probs[at], 1).squeeze(-1)
        for j, i in enumerate(rows):
            if generators[i] is not None:
                sampled[j] = torch.multinomial(probs[j], 1, generator=generators[i])[0]
        tokens = tokens.index_copy(0, index, sampled)
    logprobs = torch.log_softmax(logits.float(), dim=-1).gather(-1, tokens[:, None]).squeeze(-1)
    return tokens, logprobs
