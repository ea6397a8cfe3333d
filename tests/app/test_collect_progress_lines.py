"""Piped ``agentworld collect`` prints progress lines while it runs (issue 46, item 8): off a
terminal the progress bar showed nothing for the whole run. The real CLI in a subprocess, its
output a pipe read as it comes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from agentworld.app.progress_lines import CountLines

AGENTWORLD = str(Path(sys.executable).parent / "agentworld")


def test_piped_collect_prints_a_line_per_episode_while_it_runs(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [AGENTWORLD, "collect", "--domain", "terminal", "--episodes", "6", "--workers", "1",
         "--policy", "scripted=1", "--out", str(tmp_path / "eps.jsonl"), "--progress-every", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        running = process.poll() is None  # the line came while episodes were still running
        rest, errors = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, errors
    lines = [first, *rest.splitlines()]
    progress = [line.strip() for line in lines if line.startswith("collect terminal: ")]
    assert [re.sub(r", \d+ s$", "", line) for line in progress] == \
        [f"collect terminal: {k}/6 episodes" for k in range(1, 7)]
    assert first.startswith("collect terminal: 1/6 episodes") and running
    assert any(line.startswith("wrote 6 episodes") for line in lines)


def test_piped_collect_lines_follow_progress_every(tmp_path: Path) -> None:
    done = subprocess.run(
        [AGENTWORLD, "collect", "--domain", "terminal", "--episodes", "4", "--policy",
         "scripted=1", "--out", str(tmp_path / "eps.jsonl"), "--progress-every", "3600"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    progress = [re.sub(r", \d+ s$", "", line) for line in done.stdout.splitlines()
                if line.startswith("collect terminal: ")]
    assert progress == ["collect terminal: 1/4 episodes", "collect terminal: 4/4 episodes"]


def test_count_lines_cadence() -> None:
    now = [0.0]
    out: list[str] = []
    lines = CountLines("collect x", 5, out.append, every_s=10, clock=lambda: now[0])
    for t in (1, 2, 12, 13, 30):
        now[0] = t
        lines.advance()
    assert out == ["collect x: 1/5 episodes, 1 s", "collect x: 3/5 episodes, 12 s",
                   "collect x: 5/5 episodes, 30 s"]
