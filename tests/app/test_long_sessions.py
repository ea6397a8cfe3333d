"""The ``long`` evaluation set end to end without training: 30+-turn real sessions collected
beside a tiny training set, evaluated with the baselines (``copy-previous`` as the model, ``empty``,
``nearest``), and reported by turn index (the drift table and panel) as a split of its own."""

from __future__ import annotations

import json

from rich.console import Console

from agentworld.app.config import parse_config
from agentworld.app.figure import MIN_DRIFT_N, build_figure
from agentworld.app.pipeline import run_pipeline
from agentworld.core.io import read_episodes
from agentworld.domains.terminal.long_sessions import MIN_COMMANDS, LongSessionPolicy, long_sessions
from agentworld.domains.terminal.domain import TerminalDomain
from agentworld.domains.terminal.handwritten import sessions

PIPELINE = """
[run]
dir = "{dir}"
seed = 2
domain = "terminal"

[collect]
episodes = 6
workers = 2
eval_sets = ["long"]
eval_max_steps = 40

[eval]
backend = "copy-previous"
model = "none"
baselines = ["empty", "nearest"]
rewards = ["exact_match", "edit_similarity"]
max_transitions = 20
realistic_max_transitions = 200
"""


def test_long_sessions_chain_every_handwritten_session():
    chained = long_sessions()
    assert all(len(s.commands) >= MIN_COMMANDS for s in chained)
    # every hand-written command in order, a `cd ~` between two sessions
    assert sum(len(s.commands) for s in chained) == (
        sum(len(s.commands) for s in sessions()) + len(sessions()) - len(chained))
    policy = LongSessionPolicy()
    task = policy.task(1)
    assert policy.num_tasks == len(chained) and (task.id, task.kind) == ("long-1", "long")
    assert policy.act(task, []).text == chained[1].commands[0]


def test_long_split_is_reported_by_turn(tmp_path):
    run_dir = tmp_path / "run"
    state = run_pipeline(parse_config(PIPELINE.format(dir=run_dir)),
                         Console(file=open(tmp_path / "console.txt", "w"), width=160))
    long = read_episodes(str(run_dir / "episodes/long.jsonl"))
    assert sorted(len(e.steps) for e in long) == sorted(len(s.commands) for s in long_sessions())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["splits"]["long"]["transitions"] == sum(len(e.steps) for e in long)
    turns = metrics["by_split_turn"]["nearest"]["long"]
    assert max(int(t) for t in turns) >= MIN_COMMANDS - 1  # turn 30 and later are scored
    report = (run_dir / "report.md").read_text()
    domain = TerminalDomain()
    nondeterministic = sum(not domain.is_deterministic(s.action, s.observation)
                           for e in long for s in e.steps)
    assert metrics["splits"]["long"]["nondeterministic"] == nondeterministic
    if nondeterministic:
        assert f"| long | nondeterministic | {nondeterministic} |" in report
    else:
        assert "No step of " in report and "long" in report.split("No step of ")[1].split("\n")[0]
    assert "the nearest real transition on split long (exact match" in report
    assert f"| long | {MIN_COMMANDS - 1} | {len(long)} |" in report  # every session reaches it
    longest = max(len(e.steps) for e in long)
    assert f"| long | {longest - 1} | 1 |" in report
    drift = build_figure(state.eval_result).axes[4]
    lines = {line.get_label(): line for line in drift.get_lines()}
    assert {f"{m}, long" for m in ("model", "empty", "nearest")} <= set(lines)
    # drawn where at least MIN_DRIFT_N sessions reach the turn
    shown = list(lines["nearest, long"].get_xdata())
    assert shown == [t for t in range(longest) if sum(len(e.steps) > t for e in long) >= MIN_DRIFT_N]
