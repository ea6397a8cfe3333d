"""SFT with next-state reasoning: domain rationales, a teacher over a loopback endpoint, loss masks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from loopback import chat_route, serve
from transformers import AutoTokenizer

from agentworld.app.config import parse_config
from agentworld.core.formats import THINK_OPEN, answer_prefix, wrap_observation
from agentworld.core.types import Action, Episode, Observation, Step
from agentworld.trainers.training.config import SftConfig
from agentworld.trainers.training.data import sft_samples
from agentworld.trainers.world_model.reasoning import (
    TEACHER_SYSTEM,
    TeacherError,
    domain_rationales,
)
from agentworld.trainers.world_model.sft import SftTrainer

HOME = "/home/agent"


def _obs(text: str, cwd: str, code: int, files: dict[str, str]) -> Observation:
    return Observation(text=text, state={"cwd": cwd, "exit_code": code, "files": dict(files)})


def terminal_episode() -> Episode:
    """Three real-looking terminal transitions with structured state: create, cd, fail."""
    files = {"docs": "<dir>"}
    start = _obs("user@sandbox:~$ ", HOME, 0, files)
    after_touch = {**files, "notes.txt": "d41d8cd9"}
    steps = [
        Step(action=Action(text="touch notes.txt"),
             observation=_obs("user@sandbox:~$ ", HOME, 0, after_touch)),
        Step(action=Action(text="cd docs"),
             observation=_obs("user@sandbox:~/docs$ ", f"{HOME}/docs", 0, after_touch)),
        Step(action=Action(text="cat missing"),
             observation=_obs("cat: missing: No such file or directory\n[1] user@sandbox:~/docs$ ",
                              f"{HOME}/docs", 1, after_touch)),
    ]
    return Episode(id="ep-state", domain="terminal", system_prompt="You simulate a bash terminal.",
                   initial_observation=start, steps=steps)


def masked_runs(sample, tokenizer) -> tuple[list[str], str]:
    """Decoded maximal runs of loss-masked tokens, and the decoded unmasked rest."""
    runs, current, rest = [], [], []
    for token, keep in zip(sample.input_ids, sample.loss_mask, strict=True):
        if keep:
            current.append(token)
        else:
            rest.append(token)
            if current:
                runs.append(current)
                current = []
    if current:
        runs.append(current)
    return [tokenizer.decode(r) for r in runs], tokenizer.decode(rest)


def test_domain_rationales_follow_the_working_directory():
    """Each rationale resolves the command's path against the working directory before it."""
    (why,) = domain_rationales([terminal_episode()])
    assert why == ["cwd ~", "cd ~/docs", "cat ~/docs/missing"]


def test_reasoning_targets_have_one_think_block_inside_the_loss(corpus, tokenizer_dir, tmp_path):
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    episodes = [terminal_episode(), *corpus[:3]]
    expected = domain_rationales(episodes)
    cfg = SftConfig(output_dir=str(tmp_path), reasoning=True, max_seq_len=4096)
    assert cfg.reasoning == "domain"
    samples = SftTrainer().samples(episodes, tok, cfg)
    plain = SftTrainer().samples(episodes, tok, SftConfig(output_dir=str(tmp_path), max_seq_len=4096))
    assert len(samples) == len(plain) == len(episodes)
    for episode, why, sample, base in zip(episodes, expected, samples, plain, strict=True):
        runs, rest = masked_runs(sample, tok)
        assert runs == [
            wrap_observation(step.observation.text, r) + "<|im_end|>"
            for step, r in zip(episode.steps, why, strict=True)
        ]
        assert all(run.count(THINK_OPEN) == 1 and run.startswith(THINK_OPEN) for run in runs)
        assert THINK_OPEN not in rest and "<predicted_observation>" not in rest
        base_runs, base_rest = masked_runs(base, tok)
        assert base_runs == [wrap_observation(s.observation.text) + "<|im_end|>" for s in episode.steps]
        assert base_rest == rest  # the prompt side is the same with and without reasoning
        assert sum(sample.loss_mask) > sum(base.loss_mask)


def test_rationales_can_stay_out_of_the_loss(corpus, tokenizer_dir):
    """``train_rationale=False`` scores only what a simulator that writes the rationale asks for:
    the loss starts after ``<predicted_observation>``; the tokens are the same."""
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    episodes = [terminal_episode(), *corpus[:3]]
    why = domain_rationales(episodes)
    trained = sft_samples(episodes, tok, 4096, why)
    scored = sft_samples(episodes, tok, 4096, why, train_rationale=False)
    for episode, reasons, full, sample in zip(episodes, why, trained, scored, strict=True):
        assert sample.input_ids == full.input_ids
        runs, _ = masked_runs(sample, tok)
        assert runs == [
            wrap_observation(step.observation.text, r)[len(answer_prefix(r)) :] + "<|im_end|>"
            for step, r in zip(episode.steps, reasons, strict=True)
        ]


def test_sft_with_reasoning_trains(corpus, tokenizer_dir, tmp_path):
    out = SftTrainer().train(corpus, {
        "model": "tiny-test", "tokenizer": str(tokenizer_dir), "output_dir": str(tmp_path / "r"),
        "reasoning": "domain", "max_steps": 6, "batch_size": 4, "max_seq_len": 512,
        "warmup_steps": 1, "log_every": 1, "lr": 3e-3,
    })
    log = [json.loads(x) for x in (Path(out) / "train_log.jsonl").read_text().splitlines()]
    assert len(log) == 6 and log[-1]["loss"] < log[0]["loss"] - 0.3
    # The card tells simulators to write the rationale themselves (HFWorldModel reasoning=).
    card = json.loads((Path(out) / "agentworld.json").read_text())
    assert card["reasoning"] == "domain" and card["domain"] == "terminal"


def _teacher_answer(request: dict) -> str:
    user = request["messages"][1]["content"]
    action = user.split("Action:\n", 1)[1].split("\n", 1)[0]
    # Tags in a teacher's answer must not reach the target.
    return f"<think>Running `{action}` shows its output.</think>"


def test_teacher_rationales_over_an_openai_compatible_endpoint(corpus, tokenizer_dir, tmp_path):
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    episodes = [terminal_episode(), corpus[0]]
    with serve(chat_route(_teacher_answer)) as (url, requests):
        cfg = SftConfig(output_dir=str(tmp_path), reasoning="teacher", max_seq_len=4096,
                        teacher={"base_url": f"{url}/v1", "model": "teacher-1", "concurrency": 2})
        samples = SftTrainer().samples(episodes, tok, cfg)
        n_steps = sum(len(e.steps) for e in episodes)
        assert len(requests) == n_steps
        for episode, sample in zip(episodes, samples, strict=True):
            runs, _ = masked_runs(sample, tok)
            assert runs == [
                wrap_observation(s.observation.text, f"Running `{s.action.text}` shows its output.")
                + "<|im_end|>"
                for s in episode.steps
            ]
        sent = [json.loads(r["body"]) for r in requests]
        assert {s["model"] for s in sent} == {"teacher-1"}
        assert {s["messages"][0]["content"] for s in sent} == {TEACHER_SYSTEM.format(domain="terminal")}
        cat = next(s["messages"][1]["content"] for s in sent if "\ncat missing\n" in s["messages"][1]["content"])
        assert "Real next observation:\ncat: missing: No such file or directory" in cat
        assert "Observation before the action:\nuser@sandbox:~/docs$ " in cat
        # A second pass (a resumed run) reads the cached answers instead of asking again.
        assert SftTrainer().samples(episodes, tok, cfg)[0].input_ids == samples[0].input_ids
        assert len(requests) == n_steps
        assert len((tmp_path / "teacher_rationales.jsonl").read_text().splitlines()) == n_steps


def test_teacher_answer_without_rationale_is_an_error(tokenizer_dir, tmp_path):
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    with serve(chat_route(lambda request: "<think> </think>")) as (url, _):
        cfg = SftConfig(output_dir=str(tmp_path), reasoning="teacher",
                        teacher={"base_url": f"{url}/v1", "model": "mute", "concurrency": 1})
        with pytest.raises(TeacherError, match=r"mute at .* gave no rationale for episode ep-state turn 0"):
            SftTrainer().samples([terminal_episode()], tok, cfg)


def test_teacher_endpoint_down_is_an_error(tokenizer_dir, tmp_path):
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    cfg = SftConfig(output_dir=str(tmp_path), reasoning="teacher",
                    teacher={"base_url": "http://127.0.0.1:9/v1", "model": "gone", "timeout_s": 5})
    with pytest.raises(TeacherError, match="teacher gone at http://127.0.0.1:9/v1 failed"):
        SftTrainer().samples([terminal_episode()], tok, cfg)


def test_pipeline_sft_table_passes_reasoning_to_the_trainer():
    config = parse_config(
        '[sft]\ntrainer = "sft"\nreasoning = "teacher"\n'
        'teacher = { base_url = "http://127.0.0.1:8000/v1", model = "qwen" }\n'
    )
    options = config.sft.options()
    cfg = SftConfig.model_validate({**options, "output_dir": "x"})
    assert cfg.reasoning == "teacher" and cfg.teacher.model == "qwen"
    assert SftConfig(output_dir="x", reasoning=False).reasoning == "none"
