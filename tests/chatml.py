"""A small byte-level BPE tokenizer with ChatML specials and template, for test models, and
chat requests of several history lengths to send them.

Shared by the sim-runtime and rewards tests (``tests/`` is on ``sys.path`` because it holds
the root ``conftest.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def chatml_tokenizer(corpus: Iterable[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """Byte-level BPE of at most ``vocab_size`` tokens trained on ``corpus``; eos ``<|im_end|>``,
    pad ``<|endoftext|>``, ChatML chat template."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=CHATML,
    )


def chat_requests(system: dict[str, str], n: int) -> list[list[dict[str, str]]]:
    """``n`` chat requests after the ``system`` message, with histories of 0, 1 and 2 turns in
    turn (so a batch of them needs padding), each ending with a different user action."""
    out = []
    for i in range(n):
        history = []
        for t in range(i % 3):
            history += [
                {"role": "user", "content": f"ls dir{t}"},
                {"role": "assistant", "content": "a" * (5 * t + i)},
            ]
        out.append([system, *history, {"role": "user", "content": "cat notes.md" + " x" * i}])
    return out
