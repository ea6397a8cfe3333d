"""Fitting a chat history into a model's context window.

Policy (applied by :func:`fit_prompt`):

1. The whole prompt fits in ``budget`` tokens: use it unchanged.
2. Otherwise keep the system message and the newest user message and drop the
   oldest (user, assistant) turns, as few as possible, until it fits.
3. Even ``[system, newest action]`` is too long: keep the head of the
   system message (at most half the budget) and fill the rest with the tail of
   the prompt (the newest text and the generation prompt), cutting tokens.

Step 3 loses text in the middle and is logged as a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

logger = logging.getLogger(__name__)

Message = dict[str, str]
Render = Callable[[Sequence[Message]], list[int]]


@dataclass(frozen=True, slots=True)
class FittedPrompt:
    """A prompt cut to fit.

    Attributes:
        ids: Prompt token ids ``[seq_len]``, ``seq_len <= budget``.
        dropped_turns: (user, assistant) turns removed from the history.
        cut_tokens: Tokens removed by the last-resort cut (step 3), else 0.
    """

    ids: list[int]
    dropped_turns: int = 0
    cut_tokens: int = 0


def fit_prompt(messages: Sequence[Message], render: Render, budget: int) -> FittedPrompt:
    """Render ``messages`` to at most ``budget`` tokens following the module policy.

    Args:
        messages: ``[system?, (user, assistant) * T, user]`` chat messages.
        render: Messages -> prompt token ids (chat template with generation prompt).
        budget: Most prompt tokens allowed (tokens, >= 1).

    Raises:
        ValueError: ``messages`` is empty or ``budget < 1``.
    """
    if not messages:
        raise ValueError("cannot fit an empty conversation")
    if budget < 1:
        raise ValueError(f"budget must be >= 1 token, got {budget}")
    ids = render(messages)
    if len(ids) <= budget:
        return FittedPrompt(ids)
    head = list(messages[:1]) if messages[0]["role"] == "system" else []
    body = list(messages[len(head) :])
    max_drop = (len(body) - 1) // 2  # whole turns before the newest message

    def attempt(drop: int) -> list[int]:
        return render(head + body[2 * drop :])

    # Fewest dropped turns that fit: prompt length shrinks as turns are dropped.
    lo, hi, best = 1, max_drop, None
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = attempt(mid)
        if len(candidate) <= budget:
            best, hi = (mid, candidate), mid - 1
        else:
            lo = mid + 1
    if best is not None:
        return FittedPrompt(best[1], dropped_turns=best[0])

    ids = attempt(max_drop)
    keep_head = min(len(render(head)) if head else 0, budget // 2)
    tail = budget - keep_head
    cut = len(ids) - budget
    logger.debug(
        "prompt of %d tokens exceeds %d even without history; cutting %d tokens",
        len(ids),
        budget,
        cut,
    )
    return FittedPrompt(
        ids[:keep_head] + ids[len(ids) - tail :], dropped_turns=max_drop, cut_tokens=cut
    )
