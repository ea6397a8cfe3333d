"""Token-level generation engines: prompt ids in, generated ids out.

:class:`TokenEngine` is the seam between a world model (chat messages, parsing)
and the machinery that runs the network. :class:`StaticBatchEngine` is the
simple, correct one: micro-batches of left-padded prompts, one prefill, then
one decode step per token with a KV cache, finished rows dropped from the
batch. The paged-KV continuous-batching engine (:mod:`agentworld.sim.engine`:
``PagedEngine`` and its thread-driven ``EngineLoop``) implements the same protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from concurrent.futures import Future
from typing import Literal, Protocol, runtime_checkable

import torch
from transformers import DynamicCache, PreTrainedModel

from agentworld.sim.sampling import SamplingParams, sample

FinishReason = Literal["stop", "length", "error"]


@dataclass(slots=True)
class GenerationOutput:
    """One generated continuation.

    Attributes:
        token_ids: Generated ids ``[num_tokens]``, the stop token included when one ended it.
        finish_reason: ``"stop"`` (stop token or stop string), ``"length"`` (token limit)
            or ``"error"`` (the request failed alone; see ``error``).
        request_id: Id given by the engine that produced it (``None`` for engines without ids).
        logprobs: Log-probability of each generated token under the model's raw
            distribution ``[num_tokens]`` (natural log), when the request asked for them.
        num_cached_tokens: Prompt tokens whose KV was reused instead of recomputed (tokens).
        error: Why the request failed (``finish_reason == "error"``), else ``None``.
    """

    token_ids: list[int]
    finish_reason: FinishReason
    request_id: str | None = None
    logprobs: list[float] | None = None
    num_cached_tokens: int = 0
    error: str | None = None


def stop_string_hit(
    output_ids: list[int], stop: Sequence[str], decode: Callable[[list[int]], str] | None
) -> bool:
    """True when the newest token of ``output_ids`` completed one of the ``stop`` strings.

    Only the last ``max(len(s))`` tokens are decoded: every token that carries a character of
    a string completed by the newest token lies among them (a token decodes to >= 1 character).
    """
    if not stop or decode is None:
        return False
    tail = decode(output_ids[-max(len(s) for s in stop) :])
    return any(s in tail for s in stop)


def prefill(
    model: PreTrainedModel, prompts: Sequence[Sequence[int]], pad_token_id: int
) -> tuple[torch.Tensor, DynamicCache, torch.Tensor, torch.Tensor]:
    """Prefill ``[batch]`` prompts as one left-padded batch (pads masked out).

    Returns:
        ``(logits, cache, attention_mask, next_positions)``: next-token logits ``[batch, vocab]``,
        the prompts' KV, the mask ``[batch, width]`` (``width``: the longest prompt, tokens)
        and the position of each row's next token ``[batch]``.
    """
    n, width = len(prompts), max(len(p) for p in prompts)
    input_ids = torch.full((n, width), pad_token_id, dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    for i, prompt in enumerate(prompts):
        input_ids[i, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
        mask[i, width - len(prompt) :] = 1
    input_ids, mask = input_ids.to(model.device), mask.to(model.device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = DynamicCache(config=model.config)
    out = model(
        input_ids=input_ids,
        attention_mask=mask,
        position_ids=positions,
        cache=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    return out.logits[:, -1, :], cache, mask, positions[:, -1] + 1


def decode_step(
    model: PreTrainedModel,
    tokens: torch.Tensor,
    mask: torch.Tensor,
    positions: torch.Tensor,
    cache: DynamicCache,
) -> torch.Tensor:
    """One decode step: next-token logits ``[batch, vocab]`` after ``tokens`` ``[batch]`` at
    ``positions`` ``[batch]``; ``mask`` ``[batch, width]`` covers the cache and the new tokens."""
    return model(
        input_ids=tokens[:, None],
        attention_mask=mask,
        position_ids=positions[:, None],
        cache=cache,
        use_cache=True,
    ).logits[:, -1, :]


def by_length(
    prompts: Sequence[Sequence[int]],
    batch_size: int,
    run: Callable[[list[Sequence[int]]], list[GenerationOutput]],
) -> list[GenerationOutput]:
    """``run`` over micro-batches of at most ``batch_size`` prompts sorted by length (less
    padding); the outputs in the prompts' order.

    Raises:
        ValueError: A prompt is empty.
    """
    if any(len(p) == 0 for p in prompts):
        raise ValueError("prompts must not be empty")
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    results: list[GenerationOutput | None] = [None] * len(prompts)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        for i, output in zip(chunk, run([prompts[i] for i in chunk])):
            results[i] = output
    return results  # type: ignore[return-value]


class TokenEngine(Protocol):
    """Generates continuations of ``[batch]`` prompts given as token id lists."""

    def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[GenerationOutput]: ...


@runtime_checkable
class EpisodeEngine(Protocol):
    """An engine any thread submits single requests to, which keeps each episode's token
    history (prompt and generated tokens of its last request) between requests.

    ``submit(prompt_ids, params, episode_id, start=k)`` runs a request whose prompt is the
    episode's first ``k`` tokens followed by ``prompt_ids`` (``k=0``: ``prompt_ids`` is the
    whole prompt); concurrent requests are batched by the engine; ``submit_many(prompts,
    params, episode_ids)`` queues ``[batch]`` whole prompts together. ``fork(parent, child)``
    starts ``child`` with ``parent``'s history; ``close_episode`` forgets one. Each returns a
    ``concurrent.futures.Future``. :class:`~agentworld.sim.engine.EngineLoop` (continuous
    batching) and :class:`~agentworld.sim.batch_loop.BatchLoop` (any :class:`TokenEngine`,
    one batch at a time) implement it.
    """

    def submit(
        self,
        prompt_ids: Sequence[int],
        params: SamplingParams,
        episode_id: str | None = None,
        *,
        start: int = 0,
    ) -> Future[GenerationOutput]: ...

    def submit_many(
        self,
        prompts: Sequence[Sequence[int]],
        params: Sequence[SamplingParams],
        episode_ids: Sequence[str | None] | None = None,
    ) -> list[Future[GenerationOutput]]: ...

    def fork(self, parent_id: str, child_id: str) -> Future[None]: ...

    def close_episode(self, episode_id: str) -> Future[None]: ...


class StaticBatchEngine:
    """Batched generation with a Hugging Face causal LM and a ``DynamicCache``.

    Greedy outputs equal ``model.generate`` token for token (same stop tokens,
    fp32), whatever the batch composition, up to floating-point ties.

    Args:
        model: A causal LM taking ``input_ids, attention_mask, position_ids, cache``.
        pad_token_id: Id used for left padding (masked out, any valid id works).
        stop_token_ids: Ids that end a row (kept as its last token).
        stop_strings: Texts that end a row once they appear in its decoded output.
        decode: Token ids -> text; required when ``stop_strings`` is given.
        batch_size: Most prompts per forward pass (micro-batch size).
        max_positions: Context length of the model (tokens); a row stops when
            prompt + generated tokens reach it. ``None``: no limit.
        generator: Random generator for sampling (``None``: torch's global one).
    """

    def __init__(
        self,
        model: PreTrainedModel,
        *,
        pad_token_id: int,
        stop_token_ids: Iterable[int] = (),
        stop_strings: Sequence[str] = (),
        decode: Callable[[list[int]], str] | None = None,
        batch_size: int = 16,
        max_positions: int | None = None,
        generator: torch.Generator | None = None,
    ):
        if stop_strings and decode is None:
            raise ValueError("stop_strings need a decode function")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.pad_token_id = pad_token_id
        self.stop_token_ids = frozenset(stop_token_ids)
        self.stop_strings = tuple(stop_strings)
        self.decode = decode
        self.batch_size = batch_size
        self.max_positions = max_positions
        self.generator = generator

    def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[GenerationOutput]:
        """Continuations of ``[batch]`` prompts (each ``[seq_len]`` ids), in input order.

        Prompts are sorted by length into micro-batches of ``batch_size`` to limit padding.

        Stop strings are the engine's plus ``params.stop``.

        Raises:
            ValueError: A prompt is empty, or ``params.stop`` is set without a ``decode``.
        """
        if getattr(params, "stop", ()) and self.decode is None:
            raise ValueError("stop strings need a decode function")
        return by_length(
            prompts, self.batch_size, lambda chunk: self._generate_batch(chunk, params)
        )

    def _stopped(self, ids: list[int], params: SamplingParams) -> bool:
        if ids[-1] in self.stop_token_ids:
            return True
        return stop_string_hit(ids, (*self.stop_strings, *getattr(params, "stop", ())), self.decode)

    def _limit(self, prompt_len: int, params: SamplingParams) -> int:
        if self.max_positions is None:
            return params.max_new_tokens
        return max(1, min(params.max_new_tokens, self.max_positions - prompt_len))

    @torch.inference_mode()
    def _generate_batch(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[GenerationOutput]:
        device = self.model.device
        n = len(prompts)
        limits = [self._limit(len(p), params) for p in prompts]
        outputs: list[list[int]] = [[] for _ in range(n)]
        finish: list[FinishReason] = ["length"] * n
        rows = list(range(n))  # prompt index of each live batch row
        logits, cache, mask, next_pos = prefill(self.model, prompts, self.pad_token_id)
        while True:
            tokens = sample(logits, params, self.generator)
            keep = []
            for j, (row, token) in enumerate(zip(rows, tokens.tolist())):
                outputs[row].append(token)
                if self._stopped(outputs[row], params):
                    finish[row] = "stop"
                elif len(outputs[row]) < limits[row]:
                    keep.append(j)
            if not keep:
                break
            if len(keep) < len(rows):  # drop finished rows from the batch and the cache
                index = torch.tensor(keep, device=device)
                cache.batch_select_indices(index)
                tokens, mask, next_pos = tokens[index], mask[index], next_pos[index]
                rows = [rows[j] for j in keep]
            mask = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=1)
            logits = decode_step(self.model, tokens, mask, next_pos, cache)
            next_pos = next_pos + 1
        return [GenerationOutput(ids, reason) for ids, reason in zip(outputs, finish)]
