"""The retrieved block of one turn, the same at training and at inference.

A retrieval-augmented world model reads, at the start of each answer's ``<think>`` block, the
``k`` nearest real transitions (:mod:`agentworld.core.retrieval`). SFT writes the block into each
target from the *other* training episodes (leave-one-episode-out) and keeps it out of the loss;
the simulator writes the same block itself (the answer prefix) from the training episodes,
stored with the checkpoint (``retrieval.jsonl``) and named on its card::

    "retrieval": {"k": 4, "max_chars": 120, "max_tokens": 128, "index": "retrieval.jsonl"}

Both count the block's tokens with the checkpoint's tokenizer, so the block (and its token ids)
agree for the same turn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.core.retrieval import INDEX_FILE, TransitionIndex, retrieved_text
from agentworld.core.types import Episode

CARD_KEY = "retrieval"


def token_counter(tokenizer: Any) -> Callable[[str], int]:
    """Tokens of a text under ``tokenizer`` (a Hugging Face tokenizer), no special tokens added."""
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])


@dataclass
class RetrievalContext:
    """An index with the settings a checkpoint was trained with.

    Attributes:
        index: The transitions looked up.
        k: Transitions per turn (``>= 1``).
        max_chars: Characters of each retrieved observation.
        max_tokens: Tokens of the whole block per turn.
        count_tokens: The token count of a text (the checkpoint's tokenizer).
    """

    index: TransitionIndex
    k: int
    max_chars: int
    max_tokens: int
    count_tokens: Callable[[str], int]

    def block(self, action: str, previous: str, exclude_episode: str | None = None) -> str:
        """The retrieved block for ``action`` after the observation ``previous``
        (:func:`agentworld.core.retrieval.retrieved_text`; ``""`` when nothing fits)."""
        found = self.index.top_k(action, previous, self.k, exclude_episode=exclude_episode)
        return retrieved_text(found, self.max_chars, self.max_tokens, self.count_tokens)

    def episode_blocks(self, episodes: Sequence[Episode]) -> list[list[str]]:
        """``blocks[i][t]``: the block of ``episodes[i].steps[t]``, from episodes other than
        ``episodes[i]`` (leave-one-episode-out, as training needs)."""
        out = []
        for episode in episodes:
            before = [episode.initial_observation, *(s.observation for s in episode.steps)]
            out.append([self.block(step.action.text, before[t].text, exclude_episode=episode.id)
                        for t, step in enumerate(episode.steps)])
        return out

    def card(self) -> dict[str, Any]:
        """The card entry (module docstring)."""
        return {"k": self.k, "max_chars": self.max_chars, "max_tokens": self.max_tokens,
                "index": INDEX_FILE}


def from_checkpoint(directory: str | Path, card: dict[str, Any], tokenizer: Any,
                    domain: Any = None) -> RetrievalContext | None:
    """The context a checkpoint's card names (``None`` when it names none or ``k`` is 0).

    Args:
        directory: The checkpoint directory (holds ``retrieval.jsonl``).
        card: Its world-model card (:mod:`agentworld.core.card`).
        tokenizer: Its tokenizer.
        domain: The domain object whose ``action_type`` families requests (``None``: none).

    Raises:
        ValueError: the card's entry is not ``{"k", "max_chars", "max_tokens"}`` of positive
            integers, or the index file is damaged.
        FileNotFoundError: the index file is missing.
    """
    entry = card.get(CARD_KEY)
    if not entry:
        return None
    try:
        k, max_chars, max_tokens = (int(entry[key]) for key in ("k", "max_chars", "max_tokens"))
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{directory}: the card's retrieval entry {entry!r} needs integer k, "
                         "max_chars and max_tokens") from None
    if k <= 0:
        return None
    if max_chars <= 0 or max_tokens <= 0:
        raise ValueError(f"{directory}: the card's retrieval entry {entry!r} needs positive "
                         "max_chars and max_tokens")
    index = TransitionIndex.load(directory, domain)
    return RetrievalContext(index, k, max_chars, max_tokens, token_counter(tokenizer))


def card_note(directory: str | Path) -> str:
    """``"; retrieval k=K (N characters, T tokens per turn)"`` for a checkpoint whose card turns
    retrieval on, else ``""`` (a report's model facts say with what the model was evaluated)."""
    from agentworld.core.card import read_card

    entry = read_card(directory).get(CARD_KEY) if Path(directory).is_dir() else None
    if not entry or not entry.get("k"):
        return ""
    return (f"; retrieval k={entry['k']} ({entry.get('max_chars')} characters per observation, "
            f"{entry.get('max_tokens')} tokens per turn, the checkpoint's index)")
