"""Admitting prompts to the tokenizer: a byte bound checked before tokenising, and tokenising
off the event loop with a concurrency bound.

Rendering and tokenising a prompt costs CPU in proportion to its bytes (about 1.7 s for 1 MiB
with a fast tokenizer), so ``serve-openai`` must neither do it for a prompt that cannot fit the
context nor do it on the event loop, where it stalls every other client. :class:`PromptBound`
refuses a prompt whose UTF-8 bytes exceed what the context could hold at a generous number of
bytes per token; :class:`TokenizerPool` runs the accepted ones in worker threads (fast
tokenizers release the GIL while they encode), with small prompts in a lane of their own so
that a queue of large ones never delays them, and at most ``max_waiting`` large prompts queued
(more are refused as busy).
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

Out = TypeVar("Out")

PROMPT_BYTES_PER_TOKEN = 16.0
"""Default bytes of message text allowed per context token: generous (English and code
average 3-5 bytes per token with common BPE tokenizers), so a prompt refused by the byte
bound could not have fit the context."""
SMALL_PROMPT_BYTES = 32 * 1024
"""Prompts up to this size (bytes) are tokenised in the small lane."""


class PromptTooLarge(ValueError):
    """A prompt over the byte bound (answered with HTTP 413)."""


class TokenizerBusy(RuntimeError):
    """Too many large prompts are waiting to be tokenised (answered with HTTP 503)."""


def message_bytes(messages: Sequence[dict[str, str]]) -> int:
    """UTF-8 bytes of the roles and contents of ``messages`` (``[{"role", "content"}]``)."""
    return sum(len(m["role"].encode()) + len(m["content"].encode()) for m in messages)


@dataclass(frozen=True, slots=True)
class PromptBound:
    """The most UTF-8 bytes of message text a request may carry, checked before tokenising.

    Attributes:
        max_bytes: The bound (bytes), ``> 0``.
        reason: How it was set, for the refusal message (e.g. "its context of 512 tokens
            at 16 bytes per token").
    """

    max_bytes: int
    reason: str

    @classmethod
    def derive(
        cls,
        max_context: int | None,
        *,
        max_prompt_bytes: int | None = None,
        bytes_per_token: float = PROMPT_BYTES_PER_TOKEN,
        fallback_bytes: int,
    ) -> PromptBound:
        """The bound: ``max_prompt_bytes`` when given, else ``ceil(max_context *
        bytes_per_token)``, else (no known context) ``fallback_bytes``.

        Raises:
            ValueError: A bound or ``bytes_per_token`` that is not positive.
        """
        if max_prompt_bytes is not None:
            if max_prompt_bytes < 1:
                raise ValueError(f"max_prompt_bytes must be >= 1, got {max_prompt_bytes}")
            return cls(max_prompt_bytes, "--max-prompt-bytes")
        if not bytes_per_token > 0:
            raise ValueError(f"prompt bytes per token must be > 0, got {bytes_per_token}")
        if max_context is None:
            if fallback_bytes < 1:
                raise ValueError(f"the fallback bound must be >= 1, got {fallback_bytes}")
            return cls(fallback_bytes, "the request body limit (the model's context is unknown)")
        bound = max(1, math.ceil(max_context * bytes_per_token))
        reason = f"its context of {max_context} tokens at {bytes_per_token:g} bytes per token"
        return cls(bound, reason)

    def check(self, messages: Sequence[dict[str, str]]) -> int:
        """The bytes of ``messages`` (see :func:`message_bytes`).

        Raises:
            PromptTooLarge: They exceed :attr:`max_bytes`; the message names both numbers and
                the options that change the bound.
        """
        size = message_bytes(messages)
        if size > self.max_bytes:
            raise PromptTooLarge(
                f"prompt too large: the messages hold {size} bytes; this server accepts at most "
                f"{self.max_bytes} bytes of messages ({self.reason}; set --max-prompt-bytes "
                "or --prompt-bytes-per-token to change it)"
            )
        return size


class TokenizerPool:
    """Runs prompt preparation (render + tokenise) in worker threads, off the event loop.

    Two lanes: prompts of at most ``small_bytes`` run on their own ``workers`` threads, larger
    ones on another ``workers`` threads, so at most ``2 * workers`` prompts tokenise at once and
    a backlog of large prompts never holds up a small one. At most ``max_waiting`` large prompts
    may be queued or running; one more raises :class:`TokenizerBusy` at once.

    Args:
        workers: Threads per lane, ``>= 1``.
        max_waiting: Most large prompts admitted at once (running plus queued), ``>= workers``.
        small_bytes: Largest prompt (bytes) of the small lane.

    Raises:
        ValueError: A bound out of range.
    """

    def __init__(
        self, *, workers: int = 2, max_waiting: int = 16, small_bytes: int = SMALL_PROMPT_BYTES
    ):
        if workers < 1 or max_waiting < workers or small_bytes < 0:
            raise ValueError(
                "need workers >= 1, max_waiting >= workers and small_bytes >= 0, got "
                f"{workers}, {max_waiting} and {small_bytes}"
            )
        self.workers, self.max_waiting, self.small_bytes = workers, max_waiting, small_bytes
        self._small = ThreadPoolExecutor(workers, thread_name_prefix="tokenize-small")
        self._large = ThreadPoolExecutor(workers, thread_name_prefix="tokenize-large")
        self._admitted = 0  # large prompts running or queued
        self._lock = threading.Lock()

    async def run(self, prepare: Callable[[], Out], size: int) -> Out:
        """``prepare()`` run in the lane for a prompt of ``size`` bytes; its result or error.

        Raises:
            TokenizerBusy: ``size`` is large and ``max_waiting`` large prompts are admitted.
        """
        loop = asyncio.get_running_loop()
        if size <= self.small_bytes:
            return await loop.run_in_executor(self._small, prepare)
        with self._lock:
            if self._admitted >= self.max_waiting:
                raise TokenizerBusy(
                    f"server busy: {self._admitted} large prompts are waiting to be tokenised "
                    f"(at most {self.max_waiting}); retry later"
                )
            self._admitted += 1
        try:
            return await loop.run_in_executor(self._large, prepare)
        finally:
            with self._lock:
                self._admitted -= 1

    def close(self) -> None:
        """Stop the worker threads (queued work is cancelled)."""
        self._small.shutdown(wait=False, cancel_futures=True)
        self._large.shutdown(wait=False, cancel_futures=True)
