"""A user's history of everyday git (issue 45), replayed with real bash and git in the sandbox
(``agentworld collect --set commands=FILE --set home=DIR``, the real CLI in a subprocess).

Before: ``git commit -qm "..."`` was skipped as interactive (only ``-m`` itself counted as a
message), and ``git log``/``git diff`` ran the pager ``less`` on the dumb terminal: "WARNING:
terminal is not fully functional", "Press RETURN to continue", then the 5 s timeout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from agentworld.domains.terminal.history import refusal

HISTORY = """git init -q
git config user.email ada@example.com
git config user.name Ada
git add notes.txt
git commit -qm "first notes"
git log --format=%s
echo "call Bob" >> notes.txt
git diff --stat
"""


def test_commit_messages_in_any_option_form_are_not_interactive():
    for line in ('git commit -qm "x"', "git commit -am x", "git commit -mfix",
                 "git commit --message=x", "git commit -F msg.txt", "git commit --amend --no-edit",
                 "git commit -a -m x", "git commit --fixup=HEAD"):
        assert refusal(line) is None, line
    for line in ("git commit", "git commit -a", "git commit --amend", "git commit -v -s"):
        assert refusal(line) == "interactive", line


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_history_shows_output_not_a_pager(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("buy milk\n")
    history = tmp_path / "bash_history"
    history.write_text(HISTORY)
    out = tmp_path / "eps.jsonl"
    run = subprocess.run(
        [str(Path(sys.executable).with_name("agentworld")), "collect", "--domain", "terminal",
         "--set", f"commands={history}", "--set", f"home={home}", "--episodes", "1",
         "--out", str(out)], capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "AGENTWORLD_CACHE": str(tmp_path / "cache")})
    assert run.returncode == 0, run.stderr
    assert "bash_history: 8 command lines, 0 skipped" in run.stderr
    [episode] = [json.loads(line) for line in out.read_text().splitlines()]
    shown = {s["action"]["text"]: s["observation"]["text"] for s in episode["steps"]}
    assert len(shown) == 8
    assert shown["git log --format=%s"] == "first notes\nuser@sandbox:~$ "
    assert shown["git diff --stat"] == (" notes.txt | 1 +\n 1 file changed, 1 insertion(+)\n"
                                        "user@sandbox:~$ ")
    assert not any("WARNING: terminal" in text or "timed out" in text for text in shown.values())
