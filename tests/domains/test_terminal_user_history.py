"""``agentworld collect --domain terminal --set commands=FILE --set home=DIR``: the user's own
command lines replayed in the sandbox, in a home holding the user's files (issue 45 item 2).
The real CLI in a subprocess, real bash in the sandbox.

Before: ``commands`` and ``home`` were unknown options."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentworld.domains.terminal.history import episodes_of, read_history, refusal
from agentworld.domains.terminal.user_home import read_home

BASH_HISTORY = """#1700000000
ls
#1700000005
cat shopping.txt
#1700000010
sudo apt install cowsay
#1700000020
vim notes/monday.md
#1700000030
wc -l shopping.txt
#1700000040
cat link.txt
#1700009000
grep -n Ada notes/monday.md
#1700009005
echo done > result.txt
#1700009010
cat result.txt
#1700009020
python3
#1700009030
git commit
"""


def make_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    (home / "shopping.txt").write_text("milk\neggs\nflour\n")
    (home / "notes" / "monday.md").write_text("Meeting at 10:00 with Ada.\n")
    (home / ".profile_note").write_text("hidden but copied\n")
    (home / "blob.bin").write_bytes(b"\x00\x01binary")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret outside\n")
    (home / "link.txt").symlink_to(outside / "secret.txt")
    (home / "outdir").symlink_to(outside)
    return home


def collect(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).with_name("agentworld")), "collect", "--domain", "terminal",
         *args], capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "AGENTWORLD_CACHE": str(tmp_path / "cache")})


def test_history_replayed_in_the_users_home(tmp_path):
    home = make_home(tmp_path)
    history = tmp_path / "bash_history"
    history.write_text(BASH_HISTORY)
    out = tmp_path / "eps.jsonl"
    run = collect(tmp_path, "--set", f"commands={history}", "--set", f"home={home}",
                  "--episodes", "2", "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert "bash_history: 7 command lines, 4 skipped (interactive 3, sudo 1); 2 episodes" \
        in run.stderr
    eps = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["metadata"]["policy"] for e in eps] == ["history", "history"]
    # consecutive commands, split at the 2.5-hour pause; the skipped ones never ran
    assert [[s["action"]["text"] for s in e["steps"]] for e in eps] == [
        ["ls", "cat shopping.txt", "wc -l shopping.txt", "cat link.txt"],
        ["grep -n Ada notes/monday.md", "echo done > result.txt", "cat result.txt"]]
    shown = {s["action"]["text"]: s["observation"]["text"] for e in eps for s in e["steps"]}
    assert shown["ls"] == "notes  shopping.txt\nuser@sandbox:~$ "
    assert shown["cat shopping.txt"] == "milk\neggs\nflour\nuser@sandbox:~$ "
    assert shown["wc -l shopping.txt"].startswith("3 shopping.txt\n")
    assert shown["grep -n Ada notes/monday.md"].startswith("1:Meeting at 10:00 with Ada.\n")
    assert shown["cat result.txt"].startswith("done\n")
    # the link out of the home was not followed: no such file, no secret
    assert "No such file" in shown["cat link.txt"] and "secret" not in shown["cat link.txt"]
    for e in eps:
        files = e["task"]["setup"]["files"]
        assert files["shopping.txt"] == "milk\neggs\nflour\n" and ".profile_note" in files
        assert not {"link.txt", "blob.bin", "outdir"} & set(files)
        assert "cat ~/shopping.txt" in e["system_prompt"]  # the world model is told the home


def test_home_alone_joins_the_domains_own_tasks(tmp_path):
    home = make_home(tmp_path)
    out = tmp_path / "eps.jsonl"
    run = collect(tmp_path, "--set", f"home={home}", "--episodes", "3", "--out", str(out),
                  "--policy", "scripted=1", "--policy", "real=1")
    assert run.returncode == 0, run.stderr
    for e in (json.loads(line) for line in out.read_text().splitlines()):
        files = e["steps"][0]["observation"]["state"]["files"]
        assert files["shopping.txt"].startswith("16B ") and "notes/monday.md" in files
        assert "link.txt" not in files


def test_history_formats(tmp_path):
    zsh = tmp_path / "zsh_history"
    zsh.write_text(": 1700000000:0;ls -l\n: 1700000001:0;for i in 1 2; do\\\necho $i; done\n"
                   ": 1700000002:0;sudo reboot\n: 1700005000:0;echo hi\n")
    got = read_history(zsh)
    assert got.commands == [(1700000000, "ls -l"), (1700005000, "echo hi")]
    assert dict(got.skipped) == {"several lines": 1, "sudo": 1}
    assert episodes_of(got) == [["ls -l"], ["echo hi"]]  # over 30 minutes apart
    plain = tmp_path / "commands.txt"
    plain.write_text("# my commands\nls\n\nLANG=C sort data.txt\nless data.txt\n"
                     + "".join(f"echo {i}\n" for i in range(10)))
    got = read_history(plain)
    assert [c for _, c in got.commands][:2] == ["ls", "LANG=C sort data.txt"]
    assert got.summary() == "12 command lines, 1 skipped (interactive 1)"
    assert [len(e) for e in episodes_of(got)] == [8, 4]
    assert refusal("git commit") == "interactive" and refusal("git commit -m 'x'") is None
    assert refusal("FOO=1 sudo ls") == "sudo" and refusal("python3 -c 'print(1)'") is None
    assert refusal("echo héllo") == "not printable ASCII"


def test_an_oversized_home_is_refused(tmp_path):
    (tmp_path / "big.txt").write_text("x" * (300 << 10))
    try:
        read_home(tmp_path)
    except ValueError as e:
        assert "too large" in str(e) and str(tmp_path) in str(e)
    else:
        raise AssertionError("a 300 KiB home was copied")


def test_unusable_history_or_home_is_one_line_before_any_file(tmp_path):
    only_sudo = tmp_path / "only_sudo"
    only_sudo.write_text("sudo ls\nvim x\n")
    empty_home = tmp_path / "empty_home"
    empty_home.mkdir()
    out = tmp_path / "eps.jsonl"
    for option, says in [(f"commands={tmp_path / 'missing_history'}", "is not a file"),
                         (f"commands={only_sudo}", "holds no command line the sandbox can run"
                          " (0 command lines, 2 skipped (interactive 1, sudo 1))"),
                         (f"home={tmp_path / 'no_home'}", "is not a folder"),
                         (f"home={empty_home}", "holds no folder and no text file")]:
        run = collect(tmp_path, "--set", option, "--episodes", "1", "--out", str(out))
        assert run.returncode != 0, option
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], (option, run.stderr)
        assert not out.exists() and not Path(f"{out}.part").exists()
