"""Tokenizer training, CPT packing, SFT loss masks and windows, batching."""

from __future__ import annotations

from transformers import AutoTokenizer

from agentworld.core.formats import OBS_CLOSE, OBS_OPEN, episode_messages
from agentworld.trainers.training.data import (
    IGNORE_INDEX,
    batch_stream,
    collate,
    cpt_blocks,
    episode_sample,
    sft_samples,
)
from agentworld.trainers.models.tokenizer import train_tokenizer


def test_tokenizer_trains_and_renders_chatml(tokenizer_dir, corpus, tmp_path):
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    assert len(tok) <= 400 and tok.eos_token == tok.pad_token == "<|endoftext|>"
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "echo hi"}]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert (
        text
        == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\necho hi<|im_end|>\n<|im_start|>assistant\n"
    )
    for tag in (OBS_OPEN, OBS_CLOSE, "<|im_start|>", "<|im_end|>"):
        assert len(tok(tag, add_special_tokens=False)["input_ids"]) == 1, tag
    sample = "echo hi\nhi\nuser@sandbox:~$ ünïcode ✓"
    assert tok.decode(tok(sample)["input_ids"]) == sample
    # Saving and reloading keeps ids and template.
    fresh = train_tokenizer(["abc abc abd"] * 3, 300, tmp_path / "t")
    again = AutoTokenizer.from_pretrained(str(tmp_path / "t"))
    assert again("abc abd")["input_ids"] == fresh("abc abd")["input_ids"]
    assert again.chat_template == fresh.chat_template


def test_a_name_is_the_same_tokens_after_a_space_a_slash_or_a_newline(tmp_path):
    texts = ["ls letters\nls ~/letters: notes.md\ncd letters\nuser@sandbox:~/letters$ "] * 20
    tok = train_tokenizer(texts, 300, tmp_path / "t")

    def ids(text: str) -> list[int]:
        return tok(text, add_special_tokens=False)["input_ids"]

    name = ids("letters")
    for context in ("ls letters", "ls ~/letters:", "user@sandbox:~/letters$ "):
        found = ids(context)
        assert any(found[i : i + len(name)] == name for i in range(len(found))), context
    assert tok.decode(ids(texts[0])) == texts[0]


def test_sft_mask_covers_only_assistant_answers(tokenizer_dir, corpus):
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    episode = corpus[0]
    (sample,) = episode_sample(tok, episode, 10_000)
    messages = episode_messages(episode)
    assert tok.decode(sample.input_ids) == tok.apply_chat_template(messages, tokenize=False)
    target = [t for t, m in zip(sample.input_ids, sample.loss_mask, strict=True) if m]
    answers = "".join(m["content"] + "<|im_end|>" for m in messages if m["role"] == "assistant")
    assert tok.decode(target) == answers
    prompt = tok.decode(
        [t for t, m in zip(sample.input_ids, sample.loss_mask, strict=True) if not m]
    )
    assert (
        OBS_OPEN not in prompt and "assistant" in prompt and episode.steps[0].action.text in prompt
    )


def test_long_episode_is_windowed_at_turn_boundaries(tokenizer_dir, corpus):
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    episode = max(corpus, key=lambda e: len(e.steps))
    (whole,) = episode_sample(tok, episode, 10_000)
    limit = len(whole) // 2 + 5
    windows = episode_sample(tok, episode, limit)
    assert len(windows) >= 2 and all(len(w) <= limit for w in windows)
    system = tok.apply_chat_template(episode_messages(episode)[:1], tokenize=False)
    for w in windows:
        text = tok.decode(w.input_ids)
        assert text.startswith(system) and text[len(system) :].startswith("<|im_start|>user\n")
    n_targets = sum(tok.decode(w.input_ids).count(OBS_CLOSE) for w in windows)
    assert n_targets == len(episode.steps)


def test_cpt_blocks_pack_all_tokens(tokenizer_dir, corpus):
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    blocks = cpt_blocks(corpus, tok, 64)
    assert all(len(b) == 64 for b in blocks[:-1]) and 0 < len(blocks[-1]) <= 64
    stream = [t for b in blocks for t in b.input_ids]
    assert stream.count(tok.eos_token_id) == len(corpus)
    assert all(all(b.loss_mask) for b in blocks)


def test_batches_are_deterministic_resumable_and_padded_right(tokenizer_dir, corpus):
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    samples = sft_samples(corpus, tok, 256)
    first = [next(s) for s in [batch_stream(samples, 4, seed=3)] for _ in range(12)]
    stream = batch_stream(samples, 4, seed=3, start=7)
    assert [next(stream) for _ in range(5)] == first[7:12]
    batch = collate(first[0], tok.pad_token_id)
    assert batch["input_ids"].shape == batch["labels"].shape
    shortest = min(first[0], key=len)
    row = first[0].index(shortest)
    assert (batch["labels"][row, len(shortest) :] == IGNORE_INDEX).all()
