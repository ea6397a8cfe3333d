"""Scorer, rationale, output cleaning, prompt parsing and plugin registration (no sandbox)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from agentworld.core import plugins
from agentworld.core.protocols import Domain
from agentworld.core.types import Action, Observation, Step
from agentworld.domains.terminal.domain import TerminalDomain
from agentworld.domains.terminal.explain import explain
from agentworld.domains.terminal.output import clean_output
from agentworld.domains.terminal.prompt import Prompt, render_prompt, split_prompt
from agentworld.domains.terminal.scorer import line_f1, score

REF = Observation(text="a.txt\nb.txt\nuser@sandbox:~/docs$ ")


def test_score_exact_and_empty():
    assert score(REF.text, REF) == 1.0
    assert score("", Observation(text="")) == 1.0
    assert score("user@sandbox:~$ ", Observation(text="user@sandbox:~$ ")) == 1.0


def test_score_partial_and_disjoint():
    assert score("zzz\nqqq\nuser@sandbox:~/docs$ ", REF) == pytest.approx(0.4)
    assert score("a.txt\nuser@sandbox:~/docs$ ", REF) == pytest.approx(0.6 * 2 / 3 + 0.4)
    assert score("b.txt\na.txt\nuser@sandbox:~/docs$ ", REF) == pytest.approx(0.6 * 0.5 + 0.4)
    assert score("nothing like it", REF) == 0.0
    assert line_f1("", "x") == 0.0


def test_score_penalises_exit_and_cwd_mismatch():
    wrong_exit = "a.txt\nb.txt\n[1] user@sandbox:~/docs$ "
    wrong_cwd = "a.txt\nb.txt\nuser@sandbox:~$ "
    assert score(wrong_exit, REF) == pytest.approx(0.8)
    assert score(wrong_cwd, REF) == pytest.approx(0.8)
    ref = Observation(text="ls: cannot access 'x': No such file or directory\n[2] user@sandbox:~$ ")
    assert score(
        "ls: cannot access 'x': No such file or directory\nuser@sandbox:~$ ", ref
    ) == pytest.approx(0.8)


def test_prompt_roundtrip():
    assert render_prompt("/home/agent/a", 0) == "user@sandbox:~/a$ "
    assert render_prompt("/etc", 127) == "[127] user@sandbox:/etc$ "
    assert split_prompt("x\n[2] user@sandbox:~/a b$ ") == ("x\n", Prompt(2, "~/a b"))
    assert split_prompt("abcuser@sandbox:~$ ") == ("abc", Prompt(0, "~"))
    assert split_prompt("no prompt") == ("no prompt", None)


def test_clean_output():
    raw = b"\x1b[31mred\x1b[0m\r\nprogress 10%\rprogress 100%\r\n\x07bell\r\n"
    assert clean_output(raw, 4096) == ("red\nprogress 100%\nbell\n", False)
    text, cut = clean_output(b"line\r\n" * 2000, 100)
    assert cut and text.endswith("[output truncated after 100 bytes]\n") and len(text) < 150
    assert clean_output(b"\xff\xfeok", 10)[0] == "\ufffd\ufffdok"


def test_explain_describes_state_change():
    before = {"cwd": "/home/agent", "exit_code": 0, "files": {"a.txt": "3B x"}}
    after = {"cwd": "/home/agent/d", "exit_code": 0, "files": {"a.txt": "3B x", "d": "<dir>"}}
    step = Step(
        action=Action(text="mkdir d && cd d"),
        observation=Observation(text="user@sandbox:~/d$ ", state=after),
    )
    text = explain(step, before)
    assert "creates d" in text and "from ~ to ~/d" in text and "prints nothing" in text
    failed = Step(
        action=Action(text="cat nope"),
        observation=Observation(
            text="cat: nope: No such file or directory\n[1] user@sandbox:~$ ",
            state={"cwd": "/home/agent", "exit_code": 1, "files": before["files"]},
        ),
    )
    assert "exit status 1" in explain(failed, before) and "1 line" in explain(failed, before)


def test_domain_and_plugin():
    assert "terminal" in plugins.names("domain")
    domain = plugins.get_domain("terminal")
    assert isinstance(domain, TerminalDomain) and isinstance(domain, Domain)
    assert set(domain.policies()) == {"scripted", "random"}
    assert "prompt" in domain.system_prompt(None) and "user@sandbox" in domain.system_prompt(None)
    kinds = {
        c: domain.action_type(Action(text=c))
        for c in [
            "ls -l",
            "cat a | wc -l",
            "cd ..",
            "touch x",
            "mv a b",
            "echo hi > f",
            "wc -l f",
            "grep -r x .",
            "find .",
            "sed -i s/a/b/ f",
            "tail -n 2 f",
            "pwd",
            "vim",
            "",
        ]
    }
    assert list(kinds.values()) == [
        "ls",
        "cat",
        "cd",
        "mkdir/touch",
        "rm/mv/cp",
        "echo",
        "wc",
        "grep",
        "find",
        "sed",
        "head/tail",
        "pwd",
        "other",
        "other",
    ]
    facts = domain.describe()
    assert {"sandbox", "shell"} <= set(facts) and facts["shell"].startswith("GNU bash")


def test_package_does_not_import_torch():
    code = (
        "import sys, agentworld.domains.terminal.domain, agentworld.domains.terminal.plugin;"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_world_model_prompt_carries_the_initial_file_tree():
    domain = TerminalDomain()
    task = domain.tasks().sample(1, seed=11)[0]
    prompt = domain.system_prompt(task)
    assert prompt.startswith("You simulate a Linux bash terminal")
    for path, content in task.setup["files"].items():
        assert f"--- {path} ---\n{content.rstrip()}" in prompt
    for directory in task.setup["dirs"]:
        assert f"\nls ~/{directory}: " in prompt
    assert domain.system_prompt(None) == prompt.split("\n\nInitial state", 1)[0]


def test_initial_listing_matches_real_ls():
    from agentworld.domains.terminal.domain import render_setup

    domain = TerminalDomain()
    task = domain.tasks().sample(1, seed=4)[0]
    env = domain.make_env()
    try:
        env.reset(options={"task": task})
        listing = dict(
            line.split(": ", 1)
            for line in render_setup(task.setup).splitlines()
            if line.startswith("ls ~")
        )
        for shown, names in listing.items():
            path = shown[3:].replace("~", "/home/agent", 1)
            real = env.step(Action(text=f"ls {path}"))[0].text
            expected = "" if names == "(empty)" else names + "\n"
            assert real == expected + "user@sandbox:~$ ", shown
    finally:
        env.close()


def test_output_text_and_empty_baseline_use_the_prompt_line():
    from agentworld.core.builtins import ConstantWorldModel

    domain = TerminalDomain()
    assert domain.output_text(Observation(text="a\nb\n[1] user@sandbox:~/x$ ")) == "a\nb\n"
    assert domain.output_text(Observation(text="user@sandbox:~$ ")) == ""
    history = [
        {"role": "system", "content": "rules\n\nInitial observation:\nuser@sandbox:~$ "},
        {"role": "user", "content": "cd docs && ls nope"},
        {
            "role": "assistant",
            "content": "<predicted_observation>\nls: cannot access 'nope'\n"
            "[2] user@sandbox:~/docs$ \n</predicted_observation>",
        },
        {"role": "user", "content": "touch a"},
    ]
    empty = ConstantWorldModel("empty", domain).predict([history, history[:2]])
    assert [p.observation for p in empty] == ["user@sandbox:~/docs$ ", "user@sandbox:~$ "]
    assert ConstantWorldModel("empty").predict([history])[0].observation == ""
    copy = ConstantWorldModel("copy-previous", domain).predict([history])[0]
    assert copy.observation == "ls: cannot access 'nope'\n[2] user@sandbox:~/docs$ "
