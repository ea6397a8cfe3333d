"""SFT loss masks under the stock chat templates of Qwen3, Qwen2.5, Llama 3, Gemma 3, Phi-3.5,
gpt-oss, Mistral v0.3 and DeepSeek-R1-distill: the loss falls on exactly the assistant tokens,
whatever the template.

Each tokenizer is built here from the template string (``chat_templates/*.jinja``) and the
family's special tokens over a byte-level alphabet without merges, so a masked run decodes to
exactly the text it covers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from agentworld.core.formats import OBS_CLOSE, OBS_OPEN
from agentworld.trainers.models.chat_mask import ChatMasker
from agentworld.trainers.training.data import sft_samples
from agentworld.trainers.agents.policy_data import policy_samples

TEMPLATES = Path(__file__).parent / "chat_templates"
FAMILIES = {
    "qwen3": (
        ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>"],
        {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    ),
    "qwen2_5": (
        ["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
        {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    ),
    "llama3": (
        ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
        {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    ),
    "gemma3": (
        ["<bos>", "<eos>", "<pad>", "<start_of_turn>", "<end_of_turn>"],
        {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>"},
    ),
    "phi3_5": (
        ["<s>", "<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"],
        {"bos_token": "<s>", "eos_token": "<|endoftext|>"},
    ),
    "gptoss": (
        ["<|startoftext|>", "<|return|>", "<|start|>", "<|message|>", "<|channel|>", "<|end|>"]
        + ["<|endoftext|>", "<|call|>", "<|constrain|>"],
        {"bos_token": "<|startoftext|>", "eos_token": "<|return|>", "pad_token": "<|endoftext|>"},
    ),
    "mistral_v0_3": (
        ["<s>", "</s>", "[INST]", "[/INST]"],
        {"bos_token": "<s>", "eos_token": "</s>"},
    ),
    "deepseek_r1_distill": (
        ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"]
        + ["<think>", "</think>"],
        {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"},
    ),
}
CHAT = [
    {"role": "system", "content": "Sim."},
    {"role": "user", "content": "ls"},
    {"role": "assistant", "content": "<think>look</think>\na b"},
    {"role": "user", "content": "pwd"},
    {"role": "assistant", "content": "/h"},
]
# Per family: (strategy chosen automatically, masked runs of the one whole-chat window).
AUTO = {
    # TRL's training variant keeps every turn's <think> block, the served prompt (the stock
    # template) drops earlier ones: turn by turn, each answer after its served prompt
    "qwen3": ("turns", ["<think>look</think>\na b<|im_end|>", "<think>\n\n</think>\n\n/h<|im_end|>"]),
    "qwen2_5": ("prefix", ["<think>look</think>\na b<|im_end|>", "/h<|im_end|>"]),
    "llama3": ("prefix", ["<think>look</think>\na b<|eot_id|>", "/h<|eot_id|>"]),
    "gemma3": ("prefix", ["<think>look</think>\na b<end_of_turn>", "/h<end_of_turn>"]),
    "phi3_5": ("markers", ["<think>look</think>\na b<|end|>\n", "/h<|end|>\n<|endoftext|>"]),
    "gptoss": (
        "markers",
        [
            "<|channel|>final<|message|><think>look</think>\na b<|end|>",
            "<|channel|>final<|message|>/h<|return|>",
        ],
    ),
    # the system message only in the last user turn: not prefix-stable, so turn by turn
    "mistral_v0_3": ("turns", [" <think>look</think>\na b</s>", " /h</s>"]),
    # the served prompt ends ``<｜Assistant｜><think>\n`` and a rendered answer loses its
    # rationale: turn by turn, the rationale trained after the prompt's own <think>
    "deepseek_r1_distill": ("turns", ["look</think>\na b<｜end▁of▁sentence｜>", "/h<｜end▁of▁sentence｜>"]),
}
# Turn by turn: one sequence per assistant turn, its target what the template appends after
# the generation prompt when that turn is the last.
TURNS = {
    "qwen3": ["<think>look</think>\na b<|im_end|>", "<think>\n\n</think>\n\n/h<|im_end|>"],
    "qwen2_5": ["<think>look</think>\na b<|im_end|>", "/h<|im_end|>"],
    "llama3": ["<think>look</think>\na b<|eot_id|>", "/h<|eot_id|>"],
    "gemma3": ["<think>look</think>\na b<end_of_turn>", "/h<end_of_turn>"],
    "phi3_5": ["<think>look</think>\na b<|end|>\n<|endoftext|>", "/h<|end|>\n<|endoftext|>"],
    "gptoss": [
        "<|channel|>final<|message|><think>look</think>\na b<|return|>",
        "<|channel|>final<|message|>/h<|return|>",
    ],
    "mistral_v0_3": [" <think>look</think>\na b</s>", " /h</s>"],
    "deepseek_r1_distill": ["look</think>\na b<｜end▁of▁sentence｜>", "/h<｜end▁of▁sentence｜>"],
}


def family_tokenizer(name: str) -> PreTrainedTokenizerFast:
    """A byte-level tokenizer without merges, the family's specials, its stock chat template."""
    specials, names = FAMILIES[name]
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    template = (TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8")
    return PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=template, **names)


def masked_runs(tok: PreTrainedTokenizerFast, ids: list[int], mask: list[int]) -> list[str]:
    runs, cur = [], []
    for i, m in zip(ids, mask, strict=True):
        if m:
            cur.append(i)
        elif cur:
            runs.append(tok.decode(cur))
            cur = []
    return [*runs, tok.decode(cur)] if cur else runs


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_auto_strategy_masks_exactly_the_assistant_tokens(name: str) -> None:
    tok = family_tokenizer(name)
    masker = ChatMasker(tok)
    strategy, runs = AUTO[name]
    assert masker.strategy == strategy
    if strategy == "turns":
        windows = masker.windows(CHAT, 4096)
        assert [r for ids, mask in windows for r in masked_runs(tok, ids, mask)] == runs
        return
    [(ids, mask)] = masker.windows(CHAT, 4096)
    assert masked_runs(tok, ids, mask) == runs
    # The sequence is the template's own rendering of the chat (with the training variant for
    # "markers" on a template that has no markers of its own).
    text = tok.apply_chat_template(CHAT, tokenize=False, chat_template=masker.template)
    assert tok.decode(ids) == text


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_turn_by_turn_masks_the_last_turn_as_generated(name: str) -> None:
    tok = family_tokenizer(name)
    masker = ChatMasker(tok, strategy="turns")
    windows = masker.windows(CHAT, 4096)
    assert [masked_runs(tok, ids, mask) for ids, mask in windows] == [[t] for t in TURNS[name]]
    for k, (ids, mask) in zip((2, 4), windows, strict=True):
        # prompt = the generation prompt after the history; the target follows it
        prompt = tok.apply_chat_template(CHAT[:k], tokenize=False, add_generation_prompt=True)
        first = mask.index(1)
        assert tok.decode(ids[:first]) == prompt
        assert CHAT[0]["content"] in prompt  # the system message is seen (Mistral: last turn)


def test_mistral_v0_3_trains_the_answer_not_the_command_and_shows_the_system_prompt() -> None:
    """The reported failure: under Mistral v0.3 the loss fell on the user's command and
    ``[/INST]``, and the sequence never held the system message."""
    tok = family_tokenizer("mistral_v0_3")
    windows = ChatMasker(tok).windows(CHAT, 4096)
    for command, (ids, mask) in zip(("ls", "pwd"), windows, strict=True):
        first = mask.index(1)
        prompt, target = tok.decode(ids[:first]), "".join(masked_runs(tok, ids, mask))
        assert prompt.endswith(f"[INST] Sim.\n\n{command}[/INST]")
        assert "[INST]" not in target and "ls" not in target and "pwd" not in target
        assert target.endswith("</s>")


def test_deepseek_r1_distill_trains_the_opening_observation_tag(episodes: list) -> None:
    """The reported failure: the span started ``len("<think>\\n")`` characters into the
    answer, so ``<predicted_observation>`` was never trained."""
    tok = family_tokenizer("deepseek_r1_distill")
    samples = sft_samples(episodes, tok, 4096)
    runs = [r for s in samples for r in masked_runs(tok, s.input_ids, s.loss_mask)]
    assert runs and all(r.startswith(OBS_OPEN) for r in runs)


def test_qwen3_stock_template_is_not_prefix_stable_and_still_trains() -> None:
    """The reported failure: Qwen3's own template refused with "not prefix-stable"."""
    tok = family_tokenizer("qwen3")
    with pytest.raises(ValueError, match="not prefix-stable"):
        ChatMasker(tok, strategy="prefix")
    assert ChatMasker(tok, strategy="markers").strategy == "markers"
    assert ChatMasker(tok).strategy == "turns"  # the variant does not serve as it trains


def test_without_trl_variant_falls_back_to_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentworld.trainers.models.chat_mask as cm

    monkeypatch.setattr(cm, "training_template", lambda tok: None)
    assert ChatMasker(family_tokenizer("qwen3")).strategy == "turns"
    assert ChatMasker(family_tokenizer("qwen2_5")).strategy == "prefix"
    with pytest.raises(ValueError, match="no \\{% generation %\\} markers"):
        ChatMasker(family_tokenizer("phi3_5"), strategy="markers")


def test_long_chat_windows_keep_the_system_message_gemma3() -> None:
    """Gemma 3 folds the system message into the first user turn: a second window must be
    rendered with it again, not sliced out of the whole chat."""
    tok = family_tokenizer("gemma3")
    chat = [CHAT[0]] + [
        m
        for t in range(6)
        for m in ({"role": "user", "content": f"cmd{t}"}, {"role": "assistant", "content": f"o{t}"})
    ]
    windows = ChatMasker(tok).windows(chat, 60)
    assert len(windows) > 1
    for ids, mask in windows:
        assert len(ids) <= 60
        assert "Sim." in tok.decode(ids)
        assert all(
            r.endswith("<end_of_turn>") and r.startswith("o") for r in masked_runs(tok, ids, mask)
        )
    targets = [r for ids, mask in windows for r in masked_runs(tok, ids, mask)]
    assert targets == [f"o{t}<end_of_turn>" for t in range(6)]


@pytest.mark.parametrize(
    "name", ["qwen3", "phi3_5", "gptoss", "llama3", "mistral_v0_3", "deepseek_r1_distill"]
)
def test_sft_and_policy_samples_train_on_observations_and_actions(
    name: str, episodes: list
) -> None:
    """The world-model and policy SFT data of real episodes under each template: the targets
    are the observation blocks (world model) and the actions (policy)."""
    tok = family_tokenizer(name)
    samples = sft_samples(episodes, tok, 4096)
    targets = [r for s in samples for r in masked_runs(tok, s.input_ids, s.loss_mask)]
    steps = [st for e in episodes for st in e.steps]
    assert len(targets) == len(steps)
    for run, step in zip(targets, steps, strict=True):
        assert OBS_OPEN in run and OBS_CLOSE in run
        assert step.observation.text.rstrip() in run
    policy = policy_samples(episodes, tok, 4096)
    actions = [r for s in policy for r in masked_runs(tok, s.input_ids, s.loss_mask)]
    assert all(step.action.text in a for a, step in zip(actions, steps, strict=True))


def test_untrained_rationale_under_qwen3_starts_after_the_observation_tag(episodes: list) -> None:
    tok = family_tokenizer("qwen3")
    why = [[f"reason {i}" for i in range(len(e.steps))] for e in episodes]
    samples = sft_samples(episodes, tok, 4096, why, train_rationale=False)
    runs = [r for s in samples for r in masked_runs(tok, s.input_ids, s.loss_mask)]
    assert runs and all(not r.startswith("<think>") and "reason" not in r for r in runs)
    assert all(r.startswith("\n") and OBS_CLOSE in r for r in runs)


def test_a_tokenizer_without_chat_template_is_named() -> None:
    tok = family_tokenizer("llama3")
    tok.chat_template = None
    with pytest.raises(ValueError, match="has no chat template"):
        ChatMasker(tok)
