"""Policy SFT data (agent-side chats, action-only loss masks) and the ``policy_sft`` stage."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from agentworld.core.types import Action, Observation
from agentworld.trainers.agents.policy_data import (
    AGENT_PROMPT,
    chat_samples,
    clean_action,
    history_messages,
    policy_messages,
    policy_pair,
    policy_samples,
)
from agentworld.trainers.agents.policy_sft import PolicySftTrainer


@pytest.fixture(scope="module")
def tok(tokenizer_dir):
    return AutoTokenizer.from_pretrained(str(tokenizer_dir))


def test_policy_messages_swap_roles(corpus) -> None:
    ep = corpus[0]
    msgs = policy_messages(ep)
    assert [m["role"] for m in msgs] == ["system"] + ["user", "assistant"] * len(ep.steps)
    assert msgs[0]["content"] == f"{ep.task.instruction}\n\n{AGENT_PROMPT}"
    # the agent never sees the world model's system prompt (hidden environment set-up)
    assert ep.system_prompt not in msgs[0]["content"]
    seen = [ep.initial_observation.text] + [s.observation.text for s in ep.steps[:-1]]
    assert [m["content"] for m in msgs[1::2]] == seen
    assert [m["content"] for m in msgs[2::2]] == [s.action.text for s in ep.steps]


def test_policy_pair_equals_live_history_prompt(corpus) -> None:
    ep = corpus[1]
    for turn, step in enumerate(ep.steps):
        history: list[Observation | Action] = [ep.initial_observation]
        for s in ep.steps[:turn]:
            history += [s.action, s.observation]
        prompt, target = policy_pair(ep, turn)
        assert prompt == history_messages(ep.task, history)
        assert prompt[-1] == {"role": "user", "content": history[-1].text}
        assert target == step.action.text
    with pytest.raises(IndexError, match="out of range"):
        policy_pair(ep, len(ep.steps))


def test_history_must_alternate_and_end_with_observation(corpus) -> None:
    obs, act = Observation(text="$ "), Action(text="ls")
    with pytest.raises(ValueError, match="history must be"):
        history_messages(None, [obs, act])
    with pytest.raises(ValueError, match="history must be"):
        history_messages(None, [act, obs, act])
    assert history_messages(None, [obs], agent_prompt="Be brief.") == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "$ "},
    ]


def test_loss_mask_covers_exactly_the_actions(corpus, tok) -> None:
    ep = corpus[2]
    [sample] = chat_samples(tok, policy_messages(ep), 4096)
    masked = [t for t, m in zip(sample.input_ids, sample.loss_mask) if m]
    want = "".join(f"{s.action.text}<|im_end|>" for s in ep.steps)
    assert tok.decode(masked) == want
    assert (
        sample.input_ids
        == tok(
            tok.apply_chat_template(policy_messages(ep), tokenize=False), add_special_tokens=False
        )["input_ids"]
    )


def test_long_episodes_split_into_windows_restarting_with_system(corpus, tok) -> None:
    ep = max(corpus, key=lambda e: len(e.steps))
    msgs = policy_messages(ep)
    [whole] = chat_samples(tok, msgs, 4096)
    system_len = len(tok.apply_chat_template(msgs[:1], tokenize=True)["input_ids"])
    limit = system_len + 40
    windows = chat_samples(tok, msgs, limit)
    assert len(windows) > 1
    assert all(len(w) <= limit for w in windows)
    assert all(w.input_ids[:system_len] == whole.input_ids[:system_len] for w in windows)
    # every action is a target in exactly one window
    targets = "".join(
        tok.decode([t for t, m in zip(w.input_ids, w.loss_mask) if m]) for w in windows
    )
    assert targets == "".join(f"{s.action.text}<|im_end|>" for s in ep.steps)


def test_chat_samples_rejects_other_shapes(tok) -> None:
    with pytest.raises(ValueError, match="roles"):
        chat_samples(
            tok, [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], 64
        )


def test_policy_samples_errors(corpus, tok) -> None:
    empty = corpus[0].model_copy(update={"steps": []})
    with pytest.raises(ValueError, match="at least one action"):
        policy_samples([empty], tok, 512)
    with pytest.raises(ValueError, match="raise max_seq_len"):
        policy_samples(corpus[:3], tok, 8)
    assert len(policy_samples([empty, *corpus[:3]], tok, 512)) == 3


def test_clean_action() -> None:
    assert clean_action("  ls -l  \n cat x\n") == "ls -l"
    assert clean_action("\n\n  pwd") == "pwd"
    assert clean_action(" \n ") == ""


def test_policy_sft_trains_a_tiny_model(tmp_path, corpus, tokenizer_dir) -> None:
    """A few steps of behaviour cloning on a tiny Qwen3 lower the action loss; the
    checkpoint loads and its loss on the training actions is below the untrained model's."""
    import torch

    from agentworld.trainers.training.data import collate
    from agentworld.trainers.models.specs import load_model

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    cfg = {"output_dir": str(tmp_path / "p"), "model": "tiny-test", "tokenizer": str(tokenizer_dir),
           "max_steps": 30, "batch_size": 8, "lr": 1e-2, "warmup_steps": 2, "log_every": 5}  # fmt: skip
    path = PolicySftTrainer().train(corpus, cfg)
    log = [json.loads(x) for x in (tmp_path / "p" / "train_log.jsonl").read_text().splitlines()]
    assert log[-1]["step"] == 30 and log[-1]["loss"] < log[0]["loss"]
    batch = collate(policy_samples(corpus, tok, 512), tok.pad_token_id)
    torch.manual_seed(0)
    fresh, _ = load_model("tiny-test", tok)
    trained, _ = load_model(path)
    with torch.no_grad():
        assert trained(**batch).loss < fresh(**batch).loss - 1.0


def test_policy_sft_checks_input(tmp_path, corpus) -> None:
    empty = corpus[0].model_copy(update={"steps": []})
    with pytest.raises(ValueError, match="at least one action"):
        PolicySftTrainer().train([empty], {"output_dir": str(tmp_path), "tokenizer": "train"})
