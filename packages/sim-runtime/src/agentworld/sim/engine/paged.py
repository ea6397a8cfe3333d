"""``PagedEngine``: paged KV cache, episode-pinned block tables, continuous batching.

Requests are token-id prompts. A request tagged with an ``episode_id`` continues
that episode, whose token history the engine holds: the request gives the history
from position ``start`` on (``start=0``: all of it; a session passes the position
its new tokens begin at, so a step costs the new tokens, not the history). Only the
tokens that differ from what the episode's KV holds are prefilled (normally the new
action plus the last sampled token); the rest comes from the episode's pinned blocks,
or from the hashed prefix cache when the history was rewritten. Between requests the
episode's blocks stay pinned until :meth:`PagedEngine.close`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from collections.abc import Sequence as Seq
from typing import Any

import torch

from agentworld.sim.engine.checks import request_error
from agentworld.sim.engine.blocks import BlockPool
from agentworld.sim.engine.runner import ForwardItem, ModelRunner
from agentworld.sim.engine.scheduler import Scheduler
from agentworld.sim.engine.sequence import Sequence
from agentworld.sim.engine.sizing import default_num_blocks
from agentworld.sim.engine.stats import EngineStats
from agentworld.sim.generation import FinishReason, GenerationOutput, stop_string_hit
from agentworld.sim.sampling import SamplingParams, sample_rows


def common_prefix_len(a: Seq[int], b: Seq[int]) -> int:
    """Length of the longest common prefix of two token id sequences (tokens)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if a[lo:mid] == b[lo:mid] else (lo, mid)
    return lo


class PagedEngine:
    """Generation over a paged KV cache; implements the ``TokenEngine`` protocol.

    Greedy fp32 outputs equal ``model.generate`` token for token. Not thread-safe: drive
    it from one thread, or through :class:`~agentworld.sim.engine.loop.EngineLoop`.

    Args:
        model: A Hugging Face causal LM (Qwen3 and Llama families are tested); ``None``
            when ``runner`` is given.
        stop_token_ids: Ids that end a request (kept as its last token).
        decode: Token ids -> text, needed by requests with stop strings.
        block_size: Tokens per KV block.
        num_blocks: KV blocks in the pool; default from ``kv_cache_bytes``.
        kv_cache_bytes: KV budget (bytes) when ``num_blocks`` is not given; default 1 GiB on
            CPU, half the free memory on an accelerator, and never more blocks than
            ``max_num_seqs`` full contexts.
        max_num_batched_tokens: Token budget of one forward pass (tokens; 2048 as vLLM's chunked
            prefill default: a lockstep step of many episodes starts in one pass).
        max_num_seqs: Most requests running at once.
        enable_prefix_caching: Reuse hashed full blocks across sequences.
        max_positions: Context window (tokens); default the model's ``max_position_embeddings``.
        salt: Model version mixed into block hashes (change it with :meth:`reset_prefix_cache`).
        reuse_gathers: Keep decode groups' gathered keys/values between iterations
            (:class:`~agentworld.sim.engine.runner.ModelRunner`); ``None``: on a CPU only.
        share_prefix: Attend blocks that a batch's sequences all start with once for the
            batch (:class:`~agentworld.sim.engine.runner.ModelRunner`); ``None``: on a CPU
            only.
        runner: A model runner to use instead of building ``ModelRunner(model, ...)``.
    """

    def __init__(
        self,
        model: Any,
        *,
        stop_token_ids: Iterable[int] = (),
        decode: Callable[[list[int]], str] | None = None,
        block_size: int = 16,
        num_blocks: int | None = None,
        kv_cache_bytes: int | None = None,
        max_num_batched_tokens: int = 2048,
        max_num_seqs: int = 256,
        enable_prefix_caching: bool = True,
        max_positions: int | None = None,
        salt: str = "",
        reuse_gathers: bool | None = None,
        share_prefix: bool | None = None,
        runner: Any = None,
    ):
        config = model.config.get_text_config() if model is not None else None
        if max_positions is None and config is not None:
            max_positions = getattr(config, "max_position_embeddings", None)
        if runner is None:
            if num_blocks is None:
                num_blocks = default_num_blocks(
                    model, block_size, kv_cache_bytes, max_positions, max_num_seqs
                )
            runner = ModelRunner(
                model,
                num_blocks=num_blocks,
                block_size=block_size,
                reuse_gathers=reuse_gathers,
                share_prefix=share_prefix,
            )
        self.runner = runner
        self.device = getattr(model, "device", torch.device("cpu"))
        self.vocab_size: int | None = getattr(config, "vocab_size", None)
        self.stop_token_ids = frozenset(stop_token_ids)
        self.decode = decode
        self.max_positions = max_positions
        self.pool = BlockPool(runner.num_blocks, runner.block_size, salt)
        self.scheduler = Scheduler(
            self.pool,
            max_num_batched_tokens=max_num_batched_tokens,
            max_num_seqs=max_num_seqs,
            enable_prefix_caching=enable_prefix_caching,
        )
        self.episodes: dict[str, Sequence] = {}
        self._requests: dict[str, Sequence] = {}  # in flight, by request id
        self._failed: list[GenerationOutput] = []  # returned by the next step()
        self._ids = itertools.count()
        self._stats = EngineStats()

    @property
    def stats(self) -> EngineStats:
        """A snapshot of the counters (:class:`EngineStats`)."""
        s = self._stats
        return EngineStats(
            num_steps=s.num_steps,
            num_requests=s.num_requests,
            num_errors=s.num_errors,
            num_prompt_tokens=self.scheduler.num_prompt_tokens,
            num_cached_tokens=self.scheduler.num_cached_tokens,
            num_computed_tokens=s.num_computed_tokens,
            num_generated_tokens=s.num_generated_tokens,
            num_preemptions=self.scheduler.num_preemptions,
            num_evictions=self.pool.num_evictions,
            num_used_blocks=self.pool.num_blocks - self.pool.num_free_blocks,
        )

    def has_unfinished(self) -> bool:
        """True while a request has not been returned by :meth:`step`."""
        return bool(self._requests or self._failed)

    # -- requests ---------------------------------------------------------------------------

    def add_request(
        self,
        prompt_ids: Seq[int],
        params: SamplingParams,
        *,
        episode_id: str | None = None,
        start: int = 0,
    ) -> str:
        """Queue a request and return its id; its output comes from a later :meth:`step`.

        Args:
            prompt_ids: Prompt ``[seq_len]``; for an episode, its history from position
                ``start`` on.
            params: Sampling parameters of this request.
            episode_id: Episode to continue (created on first use), or ``None`` for a
                one-off request whose blocks are released when it finishes.
            start: Tokens ``[:start]`` of the episode's history (prompt and generated tokens
                of its last request) stay; ``prompt_ids`` replace the rest. ``0``: the
                prompt is the whole history (compared with the cached one token by token).

        A bad request (empty prompt, unknown token id, no room left in the context window,
        more KV blocks than the pool has, stop strings without ``decode``, its episode
        already in flight, ``start`` beyond the episode's history) does not raise: its
        output has ``finish_reason == "error"`` (:mod:`agentworld.sim.engine.checks`).
        """
        request_id = f"req-{next(self._ids)}"
        self._stats.num_requests += 1
        prompt = list(prompt_ids)
        error = request_error(
            prompt,
            params,
            start=start,
            episode_id=episode_id,
            episode=self.episodes.get(episode_id) if episode_id is not None else None,
            pool=self.pool,
            vocab_size=self.vocab_size,
            max_positions=self.max_positions,
            has_decode=self.decode is not None,
        )
        if error is not None:
            self._fail(request_id, error)
            return request_id
        total = start + len(prompt)
        max_len = total + params.max_new_tokens
        if self.max_positions is not None:
            max_len = min(max_len, self.max_positions)
        if episode_id is None:
            seq = Sequence(request_id, [], pinned=False)
        else:
            seq = self.episodes.setdefault(episode_id, Sequence(episode_id, [], pinned=True))
        # Keep the KV (and block hashes) of the common prefix, leaving one token to compute.
        same = seq.num_computed_tokens
        if start < same:
            same = start + common_prefix_len(seq.token_ids[start:same], prompt)
        self.scheduler.truncate(seq, min(same, total - 1))
        seq.start_request(request_id, prompt, params, max_len, self.device, start=start)
        self.scheduler.add(seq)
        self._requests[request_id] = seq
        return request_id

    def _fail(self, request_id: str, error: str) -> None:
        self._stats.num_errors += 1
        self._failed.append(GenerationOutput([], "error", request_id=request_id, error=error))

    # -- episodes ---------------------------------------------------------------------------

    def close(self, episode_id: str) -> None:
        """Release an episode's blocks (full ones stay hashed in the LRU cache).

        A request of the episode still in flight ends with an error output.

        Raises:
            KeyError: ``episode_id`` is unknown (never used, or already closed).
        """
        seq = self._episode(episode_id)
        del self.episodes[episode_id]
        if seq.in_flight:
            assert seq.request_id is not None
            del self._requests[seq.request_id]
            self._fail(seq.request_id, f"episode {episode_id!r} was closed while its request ran")
        self.scheduler.remove(seq)

    def fork(self, parent_id: str, child_id: str) -> None:
        """Start episode ``child_id`` with ``parent_id``'s history, sharing its blocks (the
        partly filled last block is copied when either writes to it).

        Raises:
            KeyError: ``parent_id`` is unknown.
            ValueError: ``child_id`` already exists.
            RuntimeError: The parent has a request in flight.
        """
        parent = self._episode(parent_id)
        if child_id in self.episodes:
            raise ValueError(f"episode {child_id!r} already exists; fork into a new id")
        if parent.in_flight:
            raise RuntimeError(f"episode {parent_id!r} has a request in flight; fork it after")
        child = Sequence(
            child_id,
            list(parent.token_ids),
            pinned=True,
            num_computed_tokens=parent.num_computed_tokens,
            block_table=parent.block_table.copy(),
            block_hashes=list(parent.block_hashes),
        )
        self.scheduler.fork(parent, child)
        self.episodes[child_id] = child

    def _episode(self, episode_id: str) -> Sequence:
        try:
            return self.episodes[episode_id]
        except KeyError:
            raise KeyError(f"unknown episode {episode_id!r} (closed or never used)") from None

    def reset_prefix_cache(self, salt: str) -> None:
        """New model version ``salt`` (e.g. after a weight update): every cached and pinned KV
        block is dropped; episodes are recomputed at their next request.

        Raises:
            RuntimeError: A request is in flight.
        """
        if self._requests:
            raise RuntimeError("reset_prefix_cache needs an engine with no request in flight")
        for seq in self.episodes.values():
            if seq.block_table:
                self.scheduler.preempt(seq)
            seq.block_hashes.clear()
        self.pool.set_salt(salt)

    # -- running ----------------------------------------------------------------------------

    def step(self) -> list[GenerationOutput]:
        """One scheduler iteration: one packed forward pass, then sampling.

        Returns:
            Outputs of the requests that finished (or failed) in this iteration.
        """
        outputs, self._failed = self._failed, []
        batch = self.scheduler.schedule()
        if not batch.seqs:
            # Every queued request fits the pool alone (checked on add), so an empty batch
            # with work left would be a scheduler deadlock.
            assert not self.scheduler.has_work(), "scheduler deadlock: nothing could run"
            return outputs
        for src, dst in batch.copies:
            self.runner.copy_block(src, dst)
        items, sampled = [], []
        for seq, n in zip(batch.seqs, batch.num_tokens):
            start = seq.num_computed_tokens
            last = start + n == len(seq.token_ids)
            items.append(
                ForwardItem(seq.token_ids[start : start + n], start, seq.block_table.view(), last)
            )
            if last:
                sampled.append(seq)
        logits = self.runner.forward(items)
        for seq, n in zip(batch.seqs, batch.num_tokens):
            self.scheduler.advance(seq, n)
        self._stats.num_steps += 1
        self._stats.num_computed_tokens += sum(batch.num_tokens)
        if not sampled:
            return outputs
        params = [seq.params for seq in sampled]
        tokens, logprobs = sample_rows(logits, params, [seq.generator for seq in sampled])
        self._stats.num_generated_tokens += len(sampled)
        for seq, token, logprob in zip(sampled, tokens.tolist(), logprobs.tolist()):
            seq.token_ids.append(token)
            seq.logprobs.append(logprob)
            reason = self._finish_reason(seq)
            if reason is not None:
                outputs.append(self._finish(seq, reason))
        return outputs

    def _finish_reason(self, seq: Sequence) -> FinishReason | None:
        assert seq.params is not None
        if seq.token_ids[-1] in self.stop_token_ids:
            return "stop"
        if stop_string_hit(seq.output_ids, getattr(seq.params, "stop", ()), self.decode):
            return "stop"
        if len(seq.token_ids) >= seq.max_len:
            return "length"
        return None

    def _finish(self, seq: Sequence, reason: FinishReason) -> GenerationOutput:
        assert seq.request_id is not None and seq.params is not None
        output = GenerationOutput(
            seq.output_ids,
            reason,
            request_id=seq.request_id,
            logprobs=list(seq.logprobs) if getattr(seq.params, "logprobs", False) else None,
            num_cached_tokens=max(seq.num_cached_tokens, 0),
        )
        del self._requests[seq.request_id]
        seq.request_id = None
        self.scheduler.finish(seq)
        return output

    def abort_all(self, error: str) -> list[GenerationOutput]:
        """End every request in flight with ``error`` (after a failed forward pass): their
        KV is released, episodes stay open and recompute at their next request."""
        outputs, self._failed = self._failed, []
        for request_id, seq in list(self._requests.items()):
            self._stats.num_errors += 1
            outputs.append(GenerationOutput([], "error", request_id=request_id, error=error))
            seq.request_id = None
            self.scheduler.abort(seq)
        self._requests.clear()
        return outputs

    def generate(
        self,
        prompts: Seq[Seq[int]],
        params: SamplingParams | Seq[SamplingParams],
        *,
        episode_ids: Seq[str | None] | None = None,
    ) -> list[GenerationOutput]:
        """Run ``[batch]`` prompts to completion and return their outputs in input order.

        Args:
            prompts: ``[batch]`` prompts, each ``[seq_len]`` token ids.
            params: One :class:`SamplingParams` for all, or ``[batch]`` of them.
            episode_ids: ``[batch]`` episode ids (``None`` entries: one-off requests).

        Outputs of requests added by others and finishing meanwhile are dropped: use
        :class:`~agentworld.sim.engine.loop.EngineLoop` to share an engine.
        """
        n = len(prompts)
        params_list = [params] * n if isinstance(params, SamplingParams) else list(params)
        episodes = list(episode_ids) if episode_ids is not None else [None] * n
        if len(params_list) != n or len(episodes) != n:
            raise ValueError(f"{n} prompts need {n} params and episode ids")
        ids = [
            self.add_request(p, sp, episode_id=e)
            for p, sp, e in zip(prompts, params_list, episodes)
        ]
        index = {request_id: i for i, request_id in enumerate(ids)}
        results: list[GenerationOutput | None] = [None] * n
        pending = n
        while pending:
            outputs = self.step()
            if not outputs and not self.scheduler.has_work():
                raise RuntimeError("the engine stopped with requests unfinished")  # a bug
            for output in outputs:
                if output.request_id in index:
                    results[index[output.request_id]] = output
                    pending -= 1
        return results  # type: ignore[return-value]
