"""Why a :class:`~agentworld.sim.engine.paged.PagedEngine` refuses a request, as an error text.

A refused request does not raise: the engine turns the text into an output with
``finish_reason == "error"``, so one bad request of a batch fails alone.
"""

from __future__ import annotations

from collections.abc import Sequence as Seq

from agentworld.sim.engine.blocks import BlockPool
from agentworld.sim.engine.sequence import Sequence
from agentworld.sim.sampling import SamplingParams


def request_error(
    prompt: Seq[int],
    params: SamplingParams,
    *,
    start: int,
    episode_id: str | None,
    episode: Sequence | None,
    pool: BlockPool,
    vocab_size: int | None,
    max_positions: int | None,
    has_decode: bool,
) -> str | None:
    """The reason request ``prompt`` cannot run, or ``None`` when it can.

    Args:
        prompt: Token ids ``[seq_len]`` from position ``start`` of the episode's history.
        params: Its sampling parameters (``max_new_tokens``, optional ``stop`` strings).
        start: Tokens of the episode's history that stay; at most the history's length.
        episode_id: The episode it continues (named in the error), or ``None``.
        episode: That episode's state, ``None`` when new or for a one-off request.
        pool: The KV block pool (``block_size`` tokens per block, ``num_blocks`` blocks).
        vocab_size: Valid token ids are ``[0, vocab_size)``; ``None``: unchecked.
        max_positions: Context window (tokens); ``None``: unbounded.
        has_decode: Whether the engine can decode tokens (stop strings need it).

    Returns:
        ``None``, or the first failed check in this order: ``start`` beyond the history, an
        empty prompt, a token id outside the vocabulary, no room left in the context window,
        stop strings without a decode function, more KV blocks than the pool has, the
        episode already in flight.
    """
    held = len(episode.token_ids) if episode is not None else 0
    if not 0 <= start <= held:
        return f"start={start} is not within the episode's history of {held} tokens"
    if not prompt:
        return "the prompt is empty"
    if vocab_size is not None and not all(0 <= t < vocab_size for t in prompt):
        bad = next(t for t in prompt if not 0 <= t < vocab_size)
        return f"token id {bad} is outside the vocabulary [0, {vocab_size})"
    length = start + len(prompt)
    if max_positions is not None and length >= max_positions:
        return (
            f"the prompt has {length} tokens; the context window holds "
            f"{max_positions} positions, so at most {max_positions - 1} fit"
        )
    if getattr(params, "stop", ()) and not has_decode:
        return "stop strings need the engine's decode function"
    total = length + params.max_new_tokens
    if max_positions is not None:
        total = min(total, max_positions)
    need = -(-total // pool.block_size)
    if need > pool.num_blocks:
        return (
            f"the request needs {need} KV blocks ({length} prompt + up to "
            f"{params.max_new_tokens} new tokens, {pool.block_size} per block) but the "
            f"pool has {pool.num_blocks}; raise num_blocks/kv_cache_bytes or shorten it"
        )
    if episode is not None and episode.in_flight:
        return f"episode {episode_id!r} already has a request in flight"
    return None
