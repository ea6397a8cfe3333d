"""A user's home (``--set home=DIR``) gets a bounded initial-state description (issue 45).

Before: every file's full text went into the world model's system prompt (199,480 characters
for the webcolors sdist), so ``train sft`` refused the episodes ("no SFT target fits"). Now
every folder is listed, files' text is shown whole, smallest first, while the description fits
``home_state_chars``, and a file left out keeps its ``cat`` header with its size. Built-in
tasks (no home) render exactly as before. Real folder (an installed package's sources), real
``collect`` with bash in the sandbox, real ``train sft`` on the tiny preset.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import cachetools
import pytest
from agentworld.core.options import OptionsError, parse_env_options
from agentworld.core.types import Task
from agentworld.domains.terminal.domain import SYSTEM_PROMPT, TerminalDomain
from agentworld.domains.terminal.explain import lookup
from agentworld.domains.terminal.prompt import HOME
from agentworld.domains.terminal.state_text import HOME_STATE_CHARS, render_setup
from agentworld.domains.terminal.tasks import TerminalTaskSampler
from agentworld.domains.terminal.user_home import read_home, with_home

CLI = str(Path(sys.executable).with_name("agentworld"))


def real_folder(tmp_path: Path) -> Path:
    """A copy of an installed package's sources: 7 Python files, ~54 KB of text."""
    home = tmp_path / "home" / "cachetools"
    shutil.copytree(Path(cachetools.__file__).parent, home,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (home.parent / "notes.txt").write_text("read the docs\n")
    return home.parent


def description(prompt: str) -> str:
    return prompt.split("\n\n", 1)[1]


def test_a_real_folder_over_the_budget_is_described_within_it(tmp_path):
    folder = real_folder(tmp_path)
    home, _ = read_home(folder)
    text_size = sum(len(t) for t in home["files"].values())
    assert text_size > 4 * HOME_STATE_CHARS  # the folder is over the budget
    task = with_home(Task(id="t", domain="terminal", instruction="look"), home)
    prompt = TerminalDomain(home=folder).system_prompt(task)
    assert prompt.startswith(SYSTEM_PROMPT + "\n\nInitial state")
    state = description(prompt)
    assert len(state) <= HOME_STATE_CHARS, len(state)
    lines = state.splitlines()
    assert "ls ~/cachetools" in lines
    names = sorted(p.name for p in (folder / "cachetools").iterdir())
    assert "  ".join(names) in lines  # every directory is listed in full
    shown, hidden = {}, {}
    for path in home["files"]:
        at = lines.index(f"cat ~/{path}")
        size = (folder / path).stat().st_size
        if lines[at + 1] == f"[{size} bytes not shown]":
            hidden[path] = size
        else:
            assert f"cat ~/{path}\n{home['files'][path].rstrip()}" in state  # whole
            shown[path] = size
    assert "notes.txt" in shown and len(hidden) >= 5, (shown, hidden)
    assert max(shown.values()) <= min(hidden.values())  # smallest first
    # a budget the listings already fill shows only the texts shorter than their size line
    # (an empty file, notes.txt), a large one shows all
    small = render_setup({**task.setup, "state_chars": 200})
    assert small.count("bytes not shown]") == len(home["files"]) - 2
    assert "cat ~/cachetools/py.typed\ncat" in small and "notes.txt\nread the docs" in small
    large = render_setup({**task.setup, "state_chars": 100_000})
    assert "bytes not shown" not in large and len(large) <= 100_000


def test_the_rationale_of_a_file_left_out_names_its_header(tmp_path):
    folder = real_folder(tmp_path)
    task = with_home(Task(id="t", domain="terminal", instruction=""), read_home(folder)[0])
    lines = render_setup(task.setup).splitlines()
    hidden = [lines[i - 1] for i, line in enumerate(lines) if line.endswith(" bytes not shown]")]
    assert "cat ~/cachetools/__init__.py" in hidden
    for action in ("cat __init__.py", "head -n 3 ./__init__.py", "wc -l ../cachetools/__init__.py"):
        assert lookup(action, f"{HOME}/cachetools") == "cat ~/cachetools/__init__.py"
    assert lookup("cat cachetools/__init__.py", HOME, [("echo x", "$ ")]) in lines


def test_built_in_tasks_render_as_before():
    setup = {"dirs": ["docs", "empty"], "files": {"docs/todo.txt": "buy milk\n", "a.txt": ""}}
    assert render_setup(setup) == (
        "Initial state (every entry dated 2024-01-01):\n"
        "ls ~\na.txt  docs  empty\nls ~/docs\ntodo.txt\nls ~/empty\n"
        "cat ~/a.txt\ncat ~/docs/todo.txt\nbuy milk")
    domain = TerminalDomain()
    for task in TerminalTaskSampler().sample(40, seed=3):
        assert "state_chars" not in task.setup
        prompt = domain.system_prompt(task)
        assert "bytes not shown" not in prompt
        for path, text in task.setup.get("files", {}).items():
            assert f"cat ~/{path}" + (f"\n{text.rstrip(chr(10))}" if text.strip() else "") \
                in prompt


def test_home_state_chars_option(tmp_path):
    folder = real_folder(tmp_path)
    domain = TerminalDomain()
    assert parse_env_options(domain, {"home": str(folder), "home_state_chars": "900"}) == {
        "home": str(folder.resolve()), "home_state_chars": 900}
    for values, words in (({"home": str(folder), "home_state_chars": "-1"}, "home_state_chars"),
                          ({"home_state_chars": "900"}, "give home=DIR too")):
        with pytest.raises(OptionsError, match=words) as err:
            parse_env_options(domain, values)
        assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match=r"state_chars.*integer >= 0\), got 'many'"):
        render_setup({"files": {"a": "b"}, "state_chars": "many"})


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, env={**os.environ, "AGENTWORLD_CACHE": str(tmp_path / "c")})


@pytest.mark.slow
def test_episodes_in_a_real_home_train(tmp_path):
    folder = real_folder(tmp_path)
    out = tmp_path / "eps.jsonl"
    collected = run(tmp_path, "collect", "--domain", "terminal", "--set", f"home={folder}",
                    "--episodes", "2", "--out", str(out),
                    "--policy", "scripted=1", "--policy", "real=1")
    assert collected.returncode == 0, collected.stderr
    episodes = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(episodes) == 2
    for e in episodes:
        state = description(e["system_prompt"])
        assert len(state) <= HOME_STATE_CHARS
        assert re.search(r"^\[\d+ bytes not shown\]$", state, re.M)
        assert e["steps"][0]["observation"]["state"]["files"]["cachetools/__init__.py"]
    ck = tmp_path / "ck"
    trained = run(tmp_path, "train", "sft", "--data", str(out), "--model", "tiny-test",
                  "--output-dir", str(ck), "--set", "tokenizer=train", "--set", "max_steps=2",
                  "--set", "max_seq_len=2048", "--set", "batch_size=2")
    assert trained.returncode == 0, trained.stdout + trained.stderr
    log = [json.loads(x) for x in (ck / "train_log.jsonl").read_text().splitlines()]
    assert [x["loss"] for x in log if "loss" in x] and all(x.get("loss", 1.0) > 0 for x in log)
