"""Training and serving see the same prompt: under every chat template of the test set, the
tokens before each SFT target are exactly the tokens the simulator sends for that answer (the
history rendered with the generation prompt, then the answer prefix the simulator writes:
the domain's rationale and the observation block's opening tag). A template that cannot hold
the chats SFT trains on is one line naming what it refuses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentworld.core.formats import answer_prefix, wrap_observation
from agentworld.sim.backends.hf_codec import ChatCodec
from agentworld.trainers.models.chat_mask import ChatMasker

from test_chat_mask import FAMILIES, family_tokenizer

RATIONALES = ["reads the listing", "prints the directory"]
CHAT = [
    {"role": "system", "content": "Simulate a terminal."},
    {"role": "user", "content": "ls"},
    {"role": "assistant", "content": wrap_observation("a b", RATIONALES[0])},
    {"role": "user", "content": "pwd"},
    {"role": "assistant", "content": wrap_observation("/h", RATIONALES[1])},
]
GEMMA2 = Path(__file__).parent / "chat_templates" / "gemma2.jinja"


def serving_codec(tokenizer, rationale: str) -> ChatCodec:
    """The ``hf`` backend's text side over ``tokenizer``, writing ``rationale`` as the
    simulator does for a checkpoint trained with domain rationales."""
    codec = ChatCodec.__new__(ChatCodec)
    codec.tokenizer, codec.prompt_format = tokenizer, "chat"
    codec.explain_text = lambda action, observation, history=(): rationale
    return codec


def first_masked(mask: list[int], k: int) -> int:
    """Index of the first token of the ``k``-th masked run."""
    starts = [i for i, m in enumerate(mask) if m and (i == 0 or not mask[i - 1])]
    return starts[k]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_target_follows_exactly_the_prompt_the_simulator_serves(name: str) -> None:
    tok = family_tokenizer(name)
    masker = ChatMasker(tok)
    skips = [answer_prefix(r) for r in RATIONALES]  # the simulator writes these
    windows = masker.windows(CHAT, 4096, skips)
    turns = [2, 4]  # index of each answer in CHAT
    if masker.strategy == "turns":
        pairs = [(ids, mask, 0) for ids, mask in windows]
    else:
        [(ids, mask)] = windows
        pairs = [(ids, mask, k) for k in range(len(turns))]
    for (ids, mask, run), k, rationale in zip(pairs, turns, RATIONALES, strict=True):
        codec = serving_codec(tok, rationale)
        served = codec.render(CHAT[:k]) + codec.answer_prefix(CHAT[:k])
        start = first_masked(mask, run)
        assert ids[:start] == served, (name, masker.strategy, tok.decode(ids[:start]),
                                       tok.decode(served))
        # the target is the observation block that follows, through the end of turn
        target = tok.decode([i for i, m in zip(ids[start:], mask[start:]) if m])
        assert target.startswith("\n" + ("a b" if k == 2 else "/h") + "\n</predicted_observation>")


def test_deepseek_r1_distill_trains_its_rationales_after_the_served_think_tag() -> None:
    """The reported failure: the template deleted every rationale (0 of 5 trained) and the
    answer was trained right after ``<｜Assistant｜>`` while the simulator prompts with
    ``<｜Assistant｜><think>\\n``."""
    tok = family_tokenizer("deepseek_r1_distill")
    windows = ChatMasker(tok).windows(CHAT, 4096)
    for (ids, mask), rationale in zip(windows, RATIONALES, strict=True):
        first = mask.index(1)
        assert tok.decode(ids[:first]).endswith("<｜Assistant｜><think>\n")
        target = tok.decode([i for i, m in zip(ids, mask) if m])
        assert target.startswith(f"{rationale}</think>\n<predicted_observation>")


def test_a_template_that_refuses_a_system_message_is_one_line() -> None:
    """Gemma 2 (``google/gemma-2-*-it``) raises ``System role not supported``: SFT says so
    in one line, naming what the template refuses, instead of a Jinja traceback."""
    from transformers import PreTrainedTokenizerFast

    gemma3 = family_tokenizer("gemma3")
    tok = PreTrainedTokenizerFast(tokenizer_object=gemma3.backend_tokenizer,
                                  chat_template=GEMMA2.read_text(encoding="utf-8"),
                                  bos_token="<bos>", eos_token="<eos>")
    with pytest.raises(ValueError) as caught:
        ChatMasker(tok)
    message = str(caught.value)
    assert "\n" not in message
    assert re.search(r"refuses .*System role not supported", message), message
