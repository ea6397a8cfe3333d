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


@pytest.mark.parametrize(
    ("cwd", "action", "rationale"),
    [
        ("/home/agent", "cat notes.txt", "cat ~/notes.txt"),
        ("/home/agent/a", "ls ../b", "ls ~/b"),
        ("/home/agent/a", "ls -la", "ls ~/a"),
        ("/home/agent/a", "ls -l . | wc -l", "ls ~/a"),
        ("/home/agent", "head -n 3 docs/todo.txt", "cat ~/docs/todo.txt"),
        ("/home/agent/docs", "grep -i milk todo.txt", "cat ~/docs/todo.txt"),
        ("/home/agent", "sed 's/a/b/' ~/x.md", "cat ~/x.md"),
        ("/home/agent", "wc -l /etc/hostname", "cat /etc/hostname"),
        ("/home/agent", "find docs -name '*.txt'", "ls ~/docs"),
        ("/home/agent/docs", "cd ..", "cd ~"),
        ("/home/agent/docs", "cd", "cd ~"),
        ("/home/agent", "mkdir d && cd d", "cwd ~"),
        ("/home/agent/docs", "echo 'unbalanced", "cwd ~/docs"),
        ("/home/agent", "grep milk", "cwd ~"),
        # A flag is not an option value: `cat -n F` reads F, as `head -n 3 F` does.
        ("/home/agent", "cat -n docs/todo.txt", "cat ~/docs/todo.txt"),
        ("/home/agent", "wc -c docs/todo.txt", "cat ~/docs/todo.txt"),
        ("/home/agent", "uniq -c todo.txt", "cat ~/todo.txt"),
        ("/home/agent", "sort -n -k 2 todo.txt", "cat ~/todo.txt"),
        ("/home/agent", "head -c 20 todo.txt", "cat ~/todo.txt"),
        ("/home/agent", "grep -c milk todo.txt", "cat ~/todo.txt"),
        ("/home/agent", "grep -n -A 1 milk todo.txt", "cat ~/todo.txt"),
        ("/home/agent", "grep -e milk todo.txt", "cat ~/todo.txt"),
        ("/home/agent", "sed -n 2p todo.txt", "cat ~/todo.txt"),
        ("/home/agent", "cut -c1-10 todo.txt", "cat ~/todo.txt"),
        ("/home/agent", "cut -d , -f 2 a.csv", "cat ~/a.csv"),
        ("/home/agent", "file run.sh", "cat ~/run.sh"),
        ("/home/agent/a", "grep -rn milk ..", "ls ~"),
        ("/home/agent/a", "grep -R milk", "ls ~/a"),
    ],
)
def test_rationale_names_the_state_line_the_command_reads(cwd, action, rationale):
    step = Step(action=Action(text=action), observation=Observation(text="user@sandbox:~$ "))
    assert explain(step, {"cwd": cwd}) == rationale
    assert TerminalDomain().explain(step, {"cwd": cwd}) == rationale
    # A simulator has only text: the previous observation's prompt line gives the directory.
    observation = f"some output\n{render_prompt(cwd, 1)}"
    assert TerminalDomain().explain_text(action, observation) == rationale


def test_rationale_header_stands_in_the_state_description():
    """The header a rationale restates is a line of the initial-state description, right above
    what the command prints (the selection head of the copy prior relies on both)."""
    domain = TerminalDomain()
    task = domain.tasks().sample(1, seed=3)[0]
    lines = domain.system_prompt(task).splitlines()
    path, content = sorted(task.setup["files"].items())[0]
    step = Step(action=Action(text=f"cat {path}"), observation=Observation(text=""))
    header = explain(step, None)
    assert header == f"cat ~/{path}"
    at = lines.index(header)
    assert lines[at + 1 : at + 1 + len(content.splitlines())] == content.splitlines()
    step = Step(action=Action(text="ls"), observation=Observation(text=""))
    assert lines[lines.index(explain(step, {"cwd": "/home/agent"})) + 1].split("  ") == sorted(
        {p.split("/")[0] for p in [*task.setup["files"], *task.setup["dirs"]]}
    )


def test_domain_and_plugin(monkeypatch):
    assert "terminal" in plugins.names("domain")
    domain = plugins.get_domain("terminal")
    assert isinstance(domain, TerminalDomain) and isinstance(domain, Domain)
    monkeypatch.delenv("AGENTWORLD_LLM_BASE_URL", raising=False)
    assert set(domain.policies()) == {"scripted", "random", "real", "handwritten", "long"}  # llm: endpoint
    monkeypatch.setenv("AGENTWORLD_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert set(domain.policies()) == {"scripted", "random", "real", "handwritten", "long", "llm"}
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
            "for i in 1 2; do echo $i; done",
            "[ -f x ] && echo y",
            "sort f | uniq -c",
            "python3 -c 'print(1)'",
            "x=7",
            "n=$(wc -l < f); echo $n",
            "LANG=C awk 1 f",
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
        "control",
        "control",
        "text",
        "python",
        "assign",
        "assign",
        "text",
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
        assert f"\ncat ~/{path}\n{content.rstrip()}" in prompt
    for directory in task.setup["dirs"]:
        assert f"\nls ~/{directory}\n" in prompt
    assert domain.system_prompt(None) == prompt.split("\n\nInitial state", 1)[0]


def test_initial_state_pieces_are_what_the_commands_print():
    """Under each header ``ls DIR`` / ``cat FILE`` stands exactly what real bash prints for it."""
    from agentworld.domains.terminal.domain import render_setup

    domain = TerminalDomain()
    task = domain.tasks().sample(1, seed=4)[0]
    lines = render_setup(task.setup).splitlines()[1:]
    headers = [i for i, line in enumerate(lines) if line.startswith(("ls ~", "cat ~"))]
    assert sum(lines[i].startswith("cat ") for i in headers) == len(task.setup["files"])
    assert sum(lines[i].startswith("ls ") for i in headers) > len(task.setup["dirs"])
    env = domain.make_env()
    try:
        env.reset(options={"task": task})
        for i, end in zip(headers, [*headers[1:], len(lines)]):
            command = lines[i].replace("~", "/home/agent", 1)
            piece = "".join(line + "\n" for line in lines[i + 1 : end])
            assert env.step(Action(text=command))[0].text == piece + "user@sandbox:~$ ", lines[i]
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
