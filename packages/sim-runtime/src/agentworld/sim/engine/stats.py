"""Counters of a :class:`~agentworld.sim.engine.paged.PagedEngine` (read with ``stats()``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class EngineStats:
    """Counters since the engine was built.

    Attributes:
        num_steps: Scheduler iterations that ran a forward pass.
        num_requests: Requests added (failed ones included).
        num_errors: Requests that finished with an error.
        num_prompt_tokens: Prompt tokens of admitted requests (queried tokens).
        num_cached_tokens: Of those, tokens served from the KV cache (prefix hits).
        num_computed_tokens: Tokens run through the model (prefill, decode and recompute).
        num_generated_tokens: Tokens sampled.
        num_preemptions: Sequences whose KV was released to make room (recomputed later).
        num_evictions: Cached (unreferenced, hashed) blocks handed out again.
        num_used_blocks: KV blocks held now (by running requests and pinned episodes).
    """

    num_steps: int = 0
    num_requests: int = 0
    num_errors: int = 0
    num_prompt_tokens: int = 0
    num_cached_tokens: int = 0
    num_computed_tokens: int = 0
    num_generated_tokens: int = 0
    num_preemptions: int = 0
    num_evictions: int = 0
    num_used_blocks: int = 0

    @property
    def prefix_hit_rate(self) -> float:
        """Cached over queried prompt tokens (0 before any request ran)."""
        return self.num_cached_tokens / self.num_prompt_tokens if self.num_prompt_tokens else 0.0
