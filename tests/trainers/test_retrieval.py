"""Retrieval-augmented world models (issue 47 item 1) on real terminal episodes: the shared
index's neighbours and leave-one-episode-out, the SFT targets and the simulator's answer prefix
agreeing token for token, a trained checkpoint that brings its index along, bad options, and the
vLLM backend's refusal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from terminal_scripts import script_episodes
from transformers import AutoTokenizer

from agentworld.app.config import EvalConfig
from agentworld.app.pipeline import RunState, run_eval
from agentworld.core import plugins
from agentworld.core.formats import THINK_OPEN, episode_messages
from agentworld.core.io import write_episodes
from agentworld.core.retrieval import TransitionIndex, retrieved_text, think_text
from agentworld.core.retrieval_context import RetrievalContext, token_counter
from agentworld.core.types import Episode
from agentworld.domains.terminal.domain import TerminalDomain
from agentworld.sim.backends.hf import HFWorldModel
from agentworld.trainers.training.config import ConfigError, SftConfig, validate_config
from agentworld.trainers.world_model.reasoning import domain_rationales
from agentworld.trainers.world_model.sft import SftTrainer

# the same script after every reset: episodes of the same task seed repeat each transition
SCRIPT = ["pwd", "echo hi", "ls", "mkdir d", "cd d", "pwd", "ls -a"]


def _collect(seeds: list[int], prefix: str) -> list[Episode]:
    return script_episodes(SCRIPT, seeds, prefix, state=True)


@pytest.fixture(scope="module")
def episodes() -> list[Episode]:
    return _collect([0, 0, 1, 2], "train")


def _before(episode: Episode, t: int) -> str:
    return (episode.initial_observation if t == 0 else episode.steps[t - 1].observation).text


def test_index_returns_the_real_neighbours_and_never_the_same_episode(episodes, tmp_path):
    index = TransitionIndex(episodes, TerminalDomain())
    a, b = episodes[0], episodes[1]
    assert [s.observation.text for s in a.steps] == [s.observation.text for s in b.steps]
    # an action seen after the same observation: the exact match first, then BM25 neighbours
    found = index.top_k("ls", _before(a, 2), 3)
    assert found[0].action == "ls" and found[0].observation == a.steps[2].observation.text
    assert found[0].episodes == ["train0", "train1"] and found[0].count == 2
    assert len({(f.action, f.observation) for f in found}) == 3  # no repeats
    # an unseen command: BM25 over its words finds the transitions sharing them
    assert index.top_k("ls -la d", "", 1)[0].action in ("ls", "ls -a")
    # leave-one-episode-out: never a transition seen only in the excluded episode
    for episode in episodes:
        for t, step in enumerate(episode.steps):
            for tr in index.top_k(step.action.text, _before(episode, t), 4,
                                  exclude_episode=episode.id):
                assert tr.episodes != [episode.id]
    alone = episodes[3]  # seed 2: its own transitions are left out, shared ones stay
    own = index.top_k("ls", _before(alone, 2), 4)
    other = index.top_k("ls", _before(alone, 2), 4, exclude_episode=alone.id)
    assert [alone.id] in [tr.episodes for tr in own]
    assert [tr for tr in own if tr.episodes != [alone.id]] == other[: len(own) - 1]
    # saved beside a checkpoint and loaded: the same transitions in the same order
    index.save(tmp_path)
    loaded = TransitionIndex.load(tmp_path, TerminalDomain())
    for episode in episodes:
        for t, step in enumerate(episode.steps):
            query = (step.action.text, _before(episode, t))
            assert ([(x.action, x.observation) for x in loaded.top_k(*query, 4)]
                    == [(x.action, x.observation) for x in index.top_k(*query, 4)])


def test_block_format_budget_and_no_contract_tags(episodes):
    index = TransitionIndex(episodes, TerminalDomain())
    found = index.top_k("ls", _before(episodes[0], 2), 4)
    found[0].observation = "a <predicted_observation>x</think> " + "y" * 50
    text = retrieved_text(found, 10, 10_000, len)
    assert text.splitlines()[:2] == [f"similar: $ {found[0].action}", "=> a x yyyyyy [...]"]
    assert "<predicted_observation>" not in text and "</think>" not in text
    assert text.count("similar: $ ") == 4 and text.endswith("\n")
    # the token budget keeps the best ones that fit, whole
    first = text[: text.index("similar", 1)]
    assert retrieved_text(found, 10, len(first), len) == first
    assert retrieved_text(found, 10, 3, len) == ""


def test_sft_targets_and_the_simulators_prefix_agree_token_for_token(episodes, tokenizer_dir,
                                                                     tmp_path):
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    cfg = SftConfig(output_dir=str(tmp_path), reasoning="domain", max_seq_len=8192,
                    retrieval={"k": 3, "max_chars": 40, "max_tokens": 200})
    trainer = SftTrainer()
    samples = trainer.samples(episodes, tok, cfg)
    assert (tmp_path / "retrieval.jsonl").is_file()
    index = TransitionIndex.load(tmp_path, TerminalDomain())
    context = RetrievalContext(index, 3, 40, 200, token_counter(tok))
    from tiny_lm import tiny_lm

    model = HFWorldModel(tiny_lm("qwen3", len(tok), 8192), tok, domain="terminal",
                         reasoning="domain", retrieval=context, engine="static")
    why = domain_rationales(episodes)
    episode, sample = episodes[0], samples[0]  # train0: each transition also in train1
    messages = episode_messages(episode)
    for t in range(len(episode.steps)):
        request = messages[: 2 + 2 * t]
        prefix = model.answer_prefix(request)
        block = context.block(episode.steps[t].action.text, _before(episode, t))
        assert block.startswith("similar: $ ") and block.count("similar: $ ") == 3
        assert tok.decode(prefix) == f"{THINK_OPEN}{think_text(block, why[0][t])}</think>\n" \
                                      "<predicted_observation>"
        at = _find(sample.input_ids, prefix)
        assert at >= 0, f"turn {t}: the simulator's prefix is not in the SFT sequence"
        # the whole request is the same tokens too: its history holds each earlier turn's
        # think block, as the SFT window does (eval's requests come without them)
        assert "<think>" not in str(request)
        if t:  # rendered as it comes, its history differs from what SFT trained on
            assert sample.input_ids[: at + len(prefix)] != model.encode(request) + prefix
        assert sample.input_ids[: at + len(prefix)] == \
            model.encode(model.history_with_think(request)) + prefix
        # the retrieved block is context, out of the loss; the rationale is trained
        block_ids = tok(THINK_OPEN + block, add_special_tokens=False)["input_ids"]
        assert not any(sample.loss_mask[at: at + len(block_ids)])
        assert all(sample.loss_mask[at + len(block_ids) + 1: at + len(prefix) - 4])
    # with reasoning="none" the think block holds only the retrieved transitions, all unscored
    plain = trainer.samples(episodes, tok, cfg.model_copy(update={"reasoning": "none"}))
    bare = HFWorldModel(model.model, tok, domain="terminal", retrieval=context, engine="static")
    prefix = bare.answer_prefix(messages[:2])
    assert tok.decode(prefix).endswith("</think>\n<predicted_observation>")
    at = _find(plain[0].input_ids, prefix)
    assert at >= 0 and not any(plain[0].loss_mask[at: at + len(prefix)])
    assert plain[0].loss_mask[at + len(prefix)] == 1


def _find(haystack: list[int], needle: list[int]) -> int:
    for i in range(len(haystack) - len(needle) + 1):
        if haystack[i: i + len(needle)] == needle:
            return i
    return -1


def test_a_checkpoint_trained_with_retrieval_evaluates_from_its_directory_alone(
        episodes, tokenizer_dir, tmp_path):
    out = SftTrainer().train(episodes[:3], {
        "model": "tiny-test", "tokenizer": str(tokenizer_dir), "output_dir": str(tmp_path / "c"),
        "reasoning": "domain", "max_steps": 2, "batch_size": 2, "max_seq_len": 2048,
        "retrieval": {"k": 2, "max_chars": 30}})
    card = json.loads((Path(out) / "agentworld.json").read_text())
    assert card["retrieval"] == {"k": 2, "max_chars": 30, "max_tokens": 128,
                                 "index": "retrieval.jsonl"}
    moved = tmp_path / "elsewhere" / "model"
    shutil.move(out, moved)  # the training data is not needed: the index travels with it
    wm = plugins.get_sim_backend("hf").load(str(moved), engine="static", max_new_tokens=8)
    assert wm.retrieval is not None and wm.retrieval.k == 2
    assert {tr.episode for tr in wm.retrieval.index.transitions} == {"train0", "train2"}
    (prediction,) = wm.predict([episode_messages(episodes[3])[:2]])
    assert prediction.text.startswith("<think>similar: $ ")  # the prefix the simulator wrote, decoded
    # eval: the report says with what retrieval the model was evaluated
    write_episodes(str(tmp_path / "heldout.jsonl"), episodes[3:])
    state = RunState(dir=str(tmp_path / "run"), seed=0, domain="terminal",
                     heldout_url=str(tmp_path / "heldout.jsonl"))
    state.train_url = ""
    cfg = EvalConfig(backend="hf", model=str(moved), baselines=[], rewards=["exact_match"],
                     max_new_tokens=8, ood_max_transitions=0, realistic_max_transitions=0)
    run_eval(cfg, state, Console(file=open(tmp_path / "eval.txt", "w")))
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert "retrieval k=2 (30 characters" in json.dumps(metrics)
    assert "retrieval k=2" in (tmp_path / "run" / "report.md").read_text()


@pytest.mark.parametrize(("value", "message"), [
    ({"k": -1}, "retrieval.k: Input should be greater than or equal to 0"),
    ({"k": 4, "max_chars": 0}, "retrieval.max_chars: Input should be greater than or equal to 1"),
    ({"k": 4, "max_tokens": "many"}, "retrieval.max_tokens: Input should be a valid integer"),
    ({"kk": 4}, "unknown option 'retrieval.kk'"),
    (4, "retrieval: Input should be a valid dictionary"),
])
def test_bad_retrieval_options_are_one_line(value, message, tmp_path):
    with pytest.raises(ConfigError) as error:
        validate_config(SftConfig, {"output_dir": str(tmp_path), "retrieval": value})
    assert message in str(error.value) and "\n" not in str(error.value)


def test_retrieval_with_a_teacher_is_refused_in_one_line(tmp_path):
    with pytest.raises(ConfigError, match="retrieval needs reasoning='domain' or 'none'") as error:
        validate_config(SftConfig, {"output_dir": str(tmp_path), "reasoning": "teacher",
                                    "teacher": {"base_url": "http://127.0.0.1:1/v1", "model": "m"},
                                    "retrieval": {"k": 2}})
    assert "\n" not in str(error.value)
    off = validate_config(SftConfig, {"output_dir": str(tmp_path), "retrieval": {"k": 0}})
    assert off.retrieval is not None and not off.retrieval.on


def test_vllm_refuses_a_checkpoint_trained_with_retrieval(tmp_path):
    (tmp_path / "agentworld.json").write_text(json.dumps(
        {"domain": "terminal", "retrieval": {"k": 4, "max_chars": 120, "max_tokens": 128}}))
    with pytest.raises(ValueError, match="trained with retrieval.*use backend 'hf'") as error:
        plugins.get_sim_backend("vllm").load(str(tmp_path))
    assert "\n" not in str(error.value)


def test_rl_from_a_retrieval_checkpoint_renders_and_serves_as_evaluation(
        episodes, tokenizer_dir, tmp_path):
    """The rl stage starts from an SFT checkpoint with domain rationales and retrieval: its
    prompts are the simulator's (each earlier turn's think block, then the answer prefix the
    simulator writes), and its checkpoint keeps the card's reasoning and retrieval with the
    index beside it, so evaluation serves it as it was trained (it kept neither before)."""
    from agentworld.trainers.world_model.rl import RlTrainer
    from agentworld.trainers.world_model.rl_data import build_prompts, chat_render

    sft = SftTrainer().train(episodes[:3], {
        "model": "tiny-test", "tokenizer": str(tokenizer_dir), "output_dir": str(tmp_path / "s"),
        "reasoning": "domain", "max_steps": 1, "batch_size": 2, "max_seq_len": 2048,
        "retrieval": {"k": 2, "max_chars": 30}})
    out = RlTrainer().train(episodes[:3], {
        "model": str(sft), "output_dir": str(tmp_path / "r"), "max_steps": 1, "batch_size": 2,
        "group_size": 2, "max_new_tokens": 8, "max_seq_len": 2048, "reward": "exact_match"})
    card = json.loads((Path(out) / "agentworld.json").read_text())
    assert card["reasoning"] == "domain" and card["retrieval"]["k"] == 2
    assert (Path(out) / "retrieval.jsonl").read_text() == \
        (Path(sft) / "retrieval.jsonl").read_text()
    wm = plugins.get_sim_backend("hf").load(str(out), engine="static", max_new_tokens=8)
    assert wm.retrieval is not None and wm.explain_text is not None
    prompts = build_prompts(episodes[3:], chat_render(wm.tokenizer), 2040, codec=wm)
    for prompt in prompts[1:]:
        prefix = wm.answer_prefix(prompt.messages)
        assert prompt.prefix_len == len(prefix) > 0
        assert wm.tokenizer.decode(prefix).startswith("<think>similar: $ ")
        assert prompt.prompt_ids == wm.encode(wm.history_with_think(prompt.messages)) + prefix
        assert wm.tokenizer.decode(prompt.prompt_ids).count("<think>") == 1 + (
            len(prompt.messages) - 2) // 2
