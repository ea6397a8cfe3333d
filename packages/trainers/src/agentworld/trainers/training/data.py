"""Tokenising episodes for the ``cpt`` and ``sft`` stages, and batching them.

CPT: each episode's :func:`~agentworld.core.formats.cpt_text` document is
tokenised, the documents are joined with eos and packed into fixed-length
blocks; the loss covers every token.

SFT: each whole episode is rendered once through the tokenizer's chat
template (:func:`~agentworld.core.formats.episode_messages`) and all its
assistant turns are trained in one sequence. The loss mask is 1 only on
assistant content (the observation blocks and the closing end-of-turn
token; with reasoning also the ``<think>`` block before it), 0 on system,
user and template tokens. An episode longer than the
window is split at turn boundaries into windows that each restart with the
system message. An episode of a Markov domain (``metadata["history_window"]``
set) is instead trained one turn per sequence, exactly as the world model is
prompted at simulation time (:func:`~agentworld.core.formats.sft_pair`).

Any chat template works: :class:`~agentworld.trainers.models.chat_mask.ChatMasker` finds the
assistant tokens by generation markers, prefixes, TRL's training variant of the template or,
failing those, turn by turn (then every turn is a sequence of its own).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from agentworld.core.formats import (
    answer_prefix,
    cpt_text,
    episode_messages,
    history_window,
    sft_pair,
)
from agentworld.core.types import Episode
from transformers import PreTrainedTokenizerBase

from agentworld.trainers.models.chat_mask import ChatMasker, render_with_spans
from agentworld.trainers.training.batches import IGNORE_INDEX, PAD_MULTIPLE, Sample, collate

__all__ = [
    "IGNORE_INDEX",
    "PAD_MULTIPLE",
    "Sample",
    "batch_stream",
    "collate",
    "cpt_blocks",
    "episode_sample",
    "length_batches",
    "render_with_spans",
    "sft_samples",
]

def cpt_blocks(
    episodes: Sequence[Episode], tokenizer: PreTrainedTokenizerBase, block_size: int
) -> list[Sample]:
    """Pack the episodes' CPT documents, each followed by eos, into blocks of ``block_size`` tokens.

    Every block but possibly the last is exactly ``block_size`` long; the last
    holds the remainder (it is kept so a tiny corpus still trains).

    Raises:
        ValueError: no episodes, or a tokenizer without an eos token.
    """
    if not episodes:
        raise ValueError("cpt needs at least one episode, got none")
    if tokenizer.eos_token_id is None:
        raise ValueError("the tokenizer has no eos token to separate CPT documents")
    docs = tokenizer([cpt_text(e) for e in episodes], add_special_tokens=False)["input_ids"]
    stream = [tok for doc in docs for tok in [*doc, tokenizer.eos_token_id]]
    return [
        Sample(stream[i : i + block_size], [1] * len(stream[i : i + block_size]))
        for i in range(0, len(stream), block_size)
    ]


def episode_sample(
    tokenizer: PreTrainedTokenizerBase,
    episode: Episode,
    max_seq_len: int,
    reasoning: Sequence[str] | None = None,
    train_rationale: bool = True,
    masker: ChatMasker | None = None,
    skips: Sequence[str] | None = None,
) -> list[Sample]:
    """The SFT sequences of one episode: ``[1, ...]`` windows of at most ``max_seq_len`` tokens.

    A window is the system message followed by as many whole turns (action
    and observation) as fit; a single turn that does not fit is cut at
    ``max_seq_len``. With ``reasoning`` (one rationale per step), each target
    is ``<think>rationale</think>`` then the observation block, all of it in the loss
    unless ``train_rationale`` is false: then the loss starts after the block's opening tag
    (:func:`~agentworld.core.formats.answer_prefix`), for simulators that write the
    rationale themselves. How the assistant tokens are found under the tokenizer's chat
    template is ``masker``'s business (:class:`~agentworld.trainers.models.chat_mask.ChatMasker`;
    built from ``tokenizer`` when not given): with a template that is not prefix-stable and
    has no generation markers, every turn is a sequence of its own. ``skips`` (one per step)
    names the start of each answer kept out of the loss instead (retrieved transitions the
    simulator writes, :mod:`agentworld.core.retrieval`).

    Raises:
        ValueError: ``reasoning`` does not have one entry per step; the tokenizer has no
            chat template.
    """
    if reasoning is not None and len(reasoning) != len(episode.steps):
        raise ValueError(
            f"episode {episode.id}: {len(reasoning)} rationales for {len(episode.steps)} steps"
        )
    masker = masker or ChatMasker(tokenizer)
    # The start of each answer kept out of the loss.
    if skips is not None:
        skip = list(skips)
    elif reasoning is not None and not train_rationale:
        skip = [answer_prefix(r) for r in reasoning]
    else:
        skip = [""] * len(episode.steps)
    if history_window(episode) is not None:
        out = []
        for t in range(len(episode.steps)):
            prompt, target = sft_pair(episode, t, reasoning[t] if reasoning else None)
            ids, mask = masker.last_turn(
                [*prompt, {"role": "assistant", "content": target}], max_seq_len, skip[t]
            )
            out.append(Sample(ids, mask))
        return out
    messages = episode_messages(episode, list(reasoning) if reasoning is not None else None)
    return [Sample(ids, mask) for ids, mask in masker.windows(messages, max_seq_len, skip)]


def sft_samples(
    episodes: Sequence[Episode],
    tokenizer: PreTrainedTokenizerBase,
    max_seq_len: int,
    reasoning: Sequence[Sequence[str]] | None = None,
    train_rationale: bool = True,
    summary: list[str] | None = None,
    skips: Sequence[Sequence[str]] | None = None,
) -> list[Sample]:
    """All SFT windows of ``episodes`` (see :func:`episode_sample`); windows with no target are dropped.

    Args:
        reasoning: Optional rationales, ``reasoning[i][t]`` for ``episodes[i].steps[t]``.
        train_rationale: Whether the rationales are in the loss (see :func:`episode_sample`).
        skips: Optional prefixes kept out of the loss, ``skips[i][t]`` of the answer to
            ``episodes[i].steps[t]`` (see :func:`episode_sample`).
        summary: When given, one line is appended to it: the masking strategy and the trained
            (loss) tokens per episode, for the training log.

    Raises:
        ValueError: no episode has a step to predict, or ``reasoning`` does not match the episodes.
    """
    if reasoning is not None and len(reasoning) != len(episodes):
        raise ValueError(f"{len(reasoning)} rationale lists for {len(episodes)} episodes")
    masker = ChatMasker(tokenizer)
    per_episode = [
        [s for s in episode_sample(tokenizer, e, max_seq_len,
                                   reasoning[i] if reasoning is not None else None,
                                   train_rationale, masker,
                                   skips[i] if skips is not None else None) if any(s.loss_mask)]
        for i, e in enumerate(episodes)
        if e.steps
    ]
    out = [s for samples in per_episode for s in samples]
    if not out and not any(e.steps for e in episodes):
        raise ValueError(
            "sft needs episodes with at least one step; none of the given episodes has one"
        )
    if not out:
        raise ValueError(
            f"no SFT target fits in max_seq_len={max_seq_len} tokens: every window is filled by "
            "the system message and the action before any observation; raise max_seq_len"
        )
    if summary is not None:
        trained = sorted(sum(sum(s.loss_mask) for s in samples) for samples in per_episode)
        summary.append(
            f"sft data: chat masking {masker.strategy!r}, {len(out)} sequences from "
            f"{len(per_episode)} episodes; trained tokens per episode: median "
            f"{trained[len(trained) // 2]}, min {trained[0]}, max {trained[-1]}"
            + ("" if reasoning is None else
               f"; rationales {'in' if train_rationale else 'out of'} the loss")
        )
    return out


def length_batches(lengths: Sequence[int], batch_size: int, seed: int) -> list[list[int]]:
    """One epoch of sample indices grouped by similar length, in a seeded random order.

    Samples are shuffled, sorted by length inside chunks of ``50 * batch_size``
    (bucketing keeps padding low), cut into batches and the batches shuffled.
    The same ``(lengths, batch_size, seed)`` gives the same batches.
    """
    rng = random.Random(seed)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    chunk = 50 * batch_size
    batches = []
    for c in range(0, len(order), chunk):
        part = sorted(order[c : c + chunk], key=lambda i: lengths[i])
        batches += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return batches


def batch_stream(
    samples: Sequence[Sample],
    batch_size: int,
    seed: int,
    start: int = 0,
    rank: int = 0,
    world: int = 1,
) -> Iterator[list[Sample]]:
    """Endless micro-batches; batch ``n`` depends only on ``(seed, n)`` so training can resume at ``start``.

    Epoch ``e`` uses :func:`length_batches` with seed ``seed + e``. With
    ``world`` processes, process ``rank`` takes global batches ``n * world + rank``.
    """
    lengths = [len(s) for s in samples]
    per_epoch = len(length_batches(lengths, batch_size, seed))
    epoch, cache = -1, []
    n = start
    while True:
        g = n * world + rank
        if g // per_epoch != epoch:
            epoch = g // per_epoch
            cache = length_batches(lengths, batch_size, seed + epoch)
        yield [samples[i] for i in cache[g % per_epoch]]
        n += 1
