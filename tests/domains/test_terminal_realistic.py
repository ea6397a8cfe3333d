"""Realistic terminal sessions: the hand-written evaluation set and the ``real`` policy's
manuals' command lines on real files, played in the real sandbox."""

from __future__ import annotations

import json
import random

import pytest
from agentworld.core.collect import collect
from agentworld.core.protocols import TaskingPolicy
from agentworld.domains.terminal.domain import TerminalDomain
from agentworld.domains.terminal.handwritten import HandwrittenPolicy, sessions
from agentworld.domains.terminal.prompt import split_prompt
from agentworld.domains.terminal.real_paths import adapt, words
from agentworld.domains.terminal.real_policy import DATA_DIR, RealPolicy, corpus

from sandboxes import needs_sandbox


@needs_sandbox
def test_handwritten_sessions_replay_in_the_sandbox_with_the_expected_outputs():
    domain = TerminalDomain()
    policy = domain.policies()["handwritten"]
    assert isinstance(policy, TaskingPolicy) and policy.num_tasks == len(sessions()) >= 20
    episodes = collect(domain, policy.num_tasks, policies={"handwritten": 1.0}, seed=5,
                       max_steps=12, workers=2)
    by_name = {s.task().id: s for s in sessions()}
    assert sorted(e.task.id for e in episodes) == sorted(by_name)  # each session once
    assert 140 <= sum(len(e.steps) for e in episodes) <= 200
    checked = 0
    for episode in episodes:
        session = by_name[episode.task.id]
        assert [s.action.text for s in episode.steps] == list(session.commands)
        assert episode.metadata["policy"] == "handwritten" and episode.task.kind == "handwritten"
        for step_no, want in session.expect.items():
            output, prompt = split_prompt(episode.steps[step_no - 1].observation.text)
            assert output.rstrip("\n") == want, (session.name, step_no)
            checked += 1
    assert checked >= 90
    # errors are real: the status marker of a failed command is in the prompt
    errors = next(e for e in episodes if e.task.id == "handwritten-errors")
    assert errors.steps[0].observation.text.startswith(
        "bash: cd: projects: No such file or directory\n[1] user@sandbox:~$ ")


def test_adapt_rewrites_path_operands_only():
    rng, files, dirs = random.Random(1), ["etc/host.conf", "data/iris.csv"], ["etc", "data"]
    mapping: dict[str, str] = {}
    line = adapt("sort -k 2 file.txt | uniq -c > counts.txt", files, dirs, rng, mapping)
    assert line in ("sort -k 2 etc/host.conf | uniq -c > counts.txt",
                    "sort -k 2 data/iris.csv | uniq -c > counts.txt")
    # the same word maps to the same path in the episode; quoted words and options stay
    again = adapt("grep -n 'a b' file.txt /etc/passwd", files, dirs, rng, mapping)
    assert again.startswith(f"grep -n 'a b' {mapping['file.txt']} ")
    assert mapping["/etc/passwd"] in files and mapping["/etc/passwd"] != mapping["file.txt"]
    assert adapt("seq 3 | sed -n '2{s/2/X/ ; p}'", files, dirs, rng, {}) == \
        "seq 3 | sed -n '2{s/2/X/ ; p}'"
    assert adapt("find /usr/local/doc -name '*.texi'", files, dirs, rng, {}) in (
        "find etc -name '*.texi'", "find data -name '*.texi'")
    assert adapt("tar -cf archive.tar dir", files, dirs, rng, {}).startswith("tar -cf archive.tar ")
    assert words('echo "a | b" | wc -c 2>/dev/null') == [
        "echo", '"a | b"', "|", "wc", "-c", "2>", "/dev/null"]


def test_real_corpus_names_sources_and_licenses():
    commands, files = corpus()
    assert sum(map(len, commands.values())) >= 400 and len(files) >= 25
    assert {"info:coreutils", "info:sed", "info:find"} <= set(commands)
    assert all(f["source"] and f["license"] and f["text"].endswith("\n") for f in files)
    raw = json.loads((DATA_DIR / "commands.json").read_text())
    assert all(e["source"].split(":")[0] in ("info", "man") for e in raw)


@needs_sandbox
def test_real_policy_runs_manual_commands_on_real_files():
    domain = TerminalDomain()
    episodes = collect(domain, 6, policies={"real": 1.0}, seed=2, max_steps=12, workers=2)
    commands, files = corpus()
    texts = {f["text"] for f in files}
    for episode in episodes:
        source = episode.task.kind
        assert source in commands and episode.task.id.startswith("real-")
        assert set(episode.task.setup["files"].values()) <= texts  # real excerpts, verbatim
        assert min(4, len(commands[source])) <= len(episode.steps) <= 10
        programs = {c.split()[0] for c in commands[source]}
        ran = [s.action.text.split()[0] for s in episode.steps]
        assert sum(p in programs for p in ran) >= min(4, len(commands[source]))
        # commands were found and finished (the corpus keeps only such lines)
        for step in episode.steps:
            assert "command not found" not in step.observation.text
            assert not step.info.get("timed_out")
    # a manual's line whose output is known: info:sed's `seq 3 | sed -n 2p` prints 2
    policy = RealPolicy(sources=["info:sed"])
    assert "seq 3 | sed -n 2p" in commands["info:sed"]
    task = policy.task(0)
    assert task.kind == "info:sed" and task.setup["files"]
    env = domain.make_env()
    try:
        env.reset(options={"task": task})
        observation, *_ = env.step("seq 3 | sed -n 2p")
    finally:
        env.close()
    assert observation == "2\nuser@sandbox:~$ "


def test_real_policy_refuses_unknown_sources():
    with pytest.raises(ValueError, match="unknown real sources \\['info:nope'\\]; valid: "):
        RealPolicy(sources=["info:nope"])
    assert HandwrittenPolicy().task(len(sessions())).id == sessions()[0].task().id
