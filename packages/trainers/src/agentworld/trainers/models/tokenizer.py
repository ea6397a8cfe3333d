"""Training a byte-level BPE tokenizer with a ChatML chat template on our corpus.

The tokenizer is what a locally built world model speaks: byte-level BPE (the
GPT-2 / Qwen scheme, so any text round-trips, except that whitespace runs are
split off as tokens of their own) trained with the ``tokenizers``
library, special tokens ``<|endoftext|>`` (eos and pad), ``<|im_start|>`` and
``<|im_end|>``, and the Qwen ChatML template with ``{% generation %}`` markers. The prediction-contract tags
(``<predicted_observation>`` and friends) are atomic added tokens, one token each.

What the BPE trainer sees is bounded (:func:`bounded_samples`): each document is cut to
its first ``MAX_SAMPLE_CHARS`` characters, and runs without whitespace longer than
``MAX_RUN_CHARS`` are fed in pieces. The trainer's time grows faster than linearly in
the length of one pre-tokenised word (500 K characters without a space took 16 s,
500 K repeats of one letter 112 s), so one 50 MB observation used to stall it for minutes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from tokenizers import (
    AddedToken,
    Regex,
    Tokenizer,
    decoders,
    models,
    pre_tokenizers,
    processors,
    trainers,
)
from transformers import PreTrainedTokenizerFast

from agentworld.core.formats import OBS_CLOSE, OBS_OPEN, THINK_CLOSE, THINK_OPEN

EOS = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = [EOS, IM_START, IM_END]
TAG_TOKENS = [OBS_OPEN, OBS_CLOSE, THINK_OPEN, THINK_CLOSE]
MIN_VOCAB = 256 + len(SPECIAL_TOKENS) + len(TAG_TOKENS)
MAX_SAMPLE_CHARS = 1 << 20
MAX_RUN_CHARS = 1024
_LONG_RUN = re.compile(rf"\S{{{MAX_RUN_CHARS + 1},}}")

# ChatML; an assistant answer and its <|im_end|> are wrapped in {% generation %} markers (they
# write nothing), so ``apply_chat_template(..., return_assistant_tokens_mask=True)`` and TRL's
# ``assistant_only_loss`` find the answers (transformers' chat-template docs, "assistant tokens
# mask"). Renders exactly as plain ChatML.
CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- generation %}{{- message['content'] + '<|im_end|>' }}{%- endgeneration %}"
    "{{- '\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def bounded_samples(texts: Iterable[str]) -> Iterator[str]:
    """``texts`` as the BPE trainer gets them: each cut to its first ``MAX_SAMPLE_CHARS``
    characters, and split (into consecutive pieces, nothing dropped) inside every run of
    more than ``MAX_RUN_CHARS`` non-whitespace characters, so no pre-tokenised word is
    longer than ``MAX_RUN_CHARS``. Texts without such runs pass unchanged."""
    for text in texts:
        text = text[:MAX_SAMPLE_CHARS]
        start = 0
        for run in _LONG_RUN.finditer(text):
            for cut in range(run.start() + MAX_RUN_CHARS, run.end(), MAX_RUN_CHARS):
                yield text[start:cut]
                start = cut
        yield text[start:]


def train_tokenizer(
    texts: Iterable[str], vocab_size: int, out_dir: str | os.PathLike[str] | None = None
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer with a ChatML chat template.

    Args:
        texts: Training documents (e.g. ``cpt_text`` of each episode plus the
            rendered chat transcripts); iterated once, bounded by :func:`bounded_samples`.
        vocab_size: Total vocabulary size in tokens, special and tag tokens
            included; at least ``MIN_VOCAB`` (263).
        out_dir: When given, the tokenizer is written there with
            ``save_pretrained`` (``tokenizer.json``, ``tokenizer_config.json``,
            chat template), loadable with ``AutoTokenizer.from_pretrained``.

    Returns:
        The tokenizer; ``eos_token == pad_token == "<|endoftext|>"``.

    Raises:
        ValueError: ``vocab_size`` below ``MIN_VOCAB``.
    """
    if vocab_size < MIN_VOCAB:
        raise ValueError(
            f"vocab_size must be at least {MIN_VOCAB} (256 bytes + tags), got {vocab_size}"
        )
    tok = Tokenizer(models.BPE())
    # Whitespace runs are tokens of their own, so a name is the same token sequence
    # wherever it appears: `letters` in the action `ls letters`, in the state line
    # `ls ~/letters:` and in the prompt `~/letters$`. With GPT-2's scheme the leading space
    # belongs to the word (` letters` vs `letters`), and copying a name from the action
    # into the observation cannot be done by matching tokens. Costs ~30% more tokens.
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\s+"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(TAG_TOKENS),
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(bounded_samples(texts), trainer=trainer)
    tok.add_tokens([AddedToken(t, single_word=False, normalized=False) for t in TAG_TOKENS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=EOS,
        pad_token=EOS,
        unk_token=None,
        bos_token=None,
        additional_special_tokens=[IM_START, IM_END],
        model_max_length=1 << 20,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHATML_TEMPLATE
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        fast.save_pretrained(str(out_dir))
    return fast
