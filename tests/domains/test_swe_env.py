"""The real swe environment in the terminal sandbox: the scripted expert fixes every task kind,
SWE-agent's editor messages, tool errors, grading with the task's own tests, privileged state,
no process left behind, and collection through the ``agentworld`` CLI."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import gymnasium
import pytest
from agentworld.app.cli import app
from agentworld.core.io import read_episodes
from agentworld.core.types import Action
from agentworld.domains.swe.env import SweEnv
from agentworld.domains.swe.policies import RandomPolicy, ScriptedExpert
from agentworld.domains.swe.tasks import KINDS, SweTaskSampler
from agentworld.domains.swe.tools import render_call
from sandboxes import needs_sandbox
from typer.testing import CliRunner

pytestmark = needs_sandbox
STATS = "/home/agent/textkit/stats.py"


def _children() -> set[int]:
    out = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        out |= {int(p) for p in (task / "children").read_text().split()}
    return out


def _play(env, policy, task):
    obs, _ = env.reset(options={"task": task})
    history, reward, done = [obs], 0.0, False
    while not done:
        action = policy.act(task, history)
        if action is None:
            break
        obs, reward, terminated, truncated, info = env.step(action)
        history += [action, obs]
        done = terminated or truncated
    return reward, history, info


def test_scripted_expert_solves_every_kind_in_both_projects_and_nothing_is_left(capsys):
    before = _children()
    env = SweEnv()
    tasks = SweTaskSampler().sample(2 * len(KINDS), seed=11)
    assert {(t.kind, t.setup["project"]) for t in tasks} == {
        (k, p) for k in KINDS for p in ("textkit", "ledger")}
    resets, steps, spent = [], 0, 0.0
    try:
        for i, task in enumerate(tasks):
            expert = ScriptedExpert()
            expert.reset(i)
            start = time.perf_counter()
            obs, info = env.reset(options={"task": task})
            resets.append(time.perf_counter() - start)
            assert obs == task.instruction and info["task_id"] == task.id
            history, reward, done, last = [obs], 0.0, False, {}
            start = time.perf_counter()
            while not done:
                action = expert.act(task, history)
                obs, reward, terminated, truncated, last = env.step(action)
                history += [action, obs]
                done = terminated or truncated
                steps += 1
            spent += time.perf_counter() - start
            assert reward == 1.0 and terminated, (task.kind, history[-1])
            suite = {"textkit": 32, "ledger": 24}[task.setup["project"]]
            assert all(last["tests"].values()) and len(last["tests"]) == suite
            assert "FAIL" in history[2]  # the first test run shows the bug
            state = env.privileged_state()
            assert state["diff"].startswith("diff --git a/" + task.setup["mutation"]["file"])
            assert all(state["tests"].values())
    finally:
        env.close()
    assert env.privileged_state() is None
    assert _children() <= before
    with capsys.disabled():
        print(f"\nswe: reset {sum(resets) / len(resets) * 1000:.0f} ms mean, "
              f"{steps / spent:.1f} expert steps/s over {steps} steps")


def test_editor_messages_tool_errors_and_grading():
    env = gymnasium.make("agentworld/swe-v0").unwrapped
    task = SweTaskSampler(["delete_line"]).sample(1, seed=2)[0]
    env.reset(options={"task": task})
    try:
        def call(name, **arguments):
            obs, reward, terminated, _, info = env.step(render_call(name, arguments))
            return str(obs), reward, terminated, info

        text, *_ = call("str_replace_editor", command="str_replace", path=STATS,
                        old_str="return", new_str="x")
        assert text.startswith("No replacement was performed. Multiple occurrences of old_str "
                               "`return` in lines [8, ") and text.endswith("Please ensure it is unique")
        text, *_ = call("str_replace_editor", command="str_replace", path=STATS,
                        old_str="no such text", new_str="x")
        assert text == ("No replacement was performed, old_str `no such text` did not appear "
                        f"verbatim in {STATS}.")
        text, *_ = call("str_replace_editor", command="view", path="textkit/stats.py")
        assert text.startswith("The path textkit/stats.py is not an absolute path")
        text, *_ = call("str_replace_editor", command="view", path="/home/agent/nope.py")
        assert text == "The path /home/agent/nope.py does not exist. Please provide a valid path."
        text, *_ = call("str_replace_editor", command="insert", path=STATS, insert_line=999,
                        new_str="x")
        assert text == ("Invalid `insert_line` parameter: 999. It should be within the range of "
                        "lines of the file: [0, 70]")
        text, *_ = call("str_replace_editor", command="view", path=STATS, view_range=[4, 6])
        assert text == (f"Here's the result of running `cat -n` on {STATS}:\n     4\tdef "
                        "mean(values):\n     5\t    \"\"\"Arithmetic mean; raises ValueError for "
                        "an empty list.\"\"\"\n     6\t    if len(values) == 0:")
        text, *_ = call("str_replace_editor", command="create", path="/home/agent/new.py",
                        file_text="x = 1\n")
        assert text == "File created successfully at: /home/agent/new.py"
        text, *_ = call("str_replace_editor", command="insert", path="/home/agent/new.py",
                        insert_line=1, new_str="y = 2")
        assert "\n+y = 2\n" in text and text.startswith("The file /home/agent/new.py has been edited.")
        for bad, message in [(Action(text="fix it"), "Error: the action is not a JSON tool call"),
                             (Action(text='{"name": "edit", "arguments": {}}'), "Error: unknown tool 'edit'"),
                             (render_call("bash", {"cmd": "ls"}), "Error: bash: unknown argument(s) cmd"),
                             (render_call("run_tests", {"tests": [3]}), 'Error: run_tests: "tests" must'),
                             (Action(text='{"name": "bash", "arguments": [1]}'), 'Error: "arguments" must')]:
            obs, reward, terminated, _, info = env.step(bad)
            assert obs.startswith(message) and info["error"] and not terminated and reward == 0.0
        # the agent "fixes" the failing tests by deleting them: grading uses the task's tests
        text, reward, terminated, _ = call("bash", command="git rm -q -r tests && echo gone")
        assert text.strip() == "gone" and reward == 0.0
        text, reward, terminated, info = call("submit")
        assert terminated and reward == 0.0 and "the issue is not resolved." in text
        assert f"FAILED {task.check['fail_to_pass'][0]}" in text
        assert "deleted file mode" in text
    finally:
        env.close()


def test_random_policy_never_raises():
    env = SweEnv(max_steps=12)
    try:
        for seed in range(3):
            task = SweTaskSampler().sample(1, seed=seed)[0]
            policy = RandomPolicy()
            policy.reset(seed)
            _play(env, policy, task)
    finally:
        env.close()


def test_collect_and_convert_through_the_cli(tmp_path):
    runner = CliRunner()
    out = tmp_path / "swe.jsonl"
    result = runner.invoke(app, ["collect", "--domain", "swe", "--episodes", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    episodes = read_episodes(str(out))
    assert len(episodes) == 2 and all(e.domain == "swe" and e.steps for e in episodes)
    for e in episodes:
        assert json.loads(e.steps[0].action.text.strip("`json\n"))["name"]
        assert set(e.steps[-1].observation.state) == {"diff", "tests"}
    awb = tmp_path / "awb.jsonl"
    result = runner.invoke(app, ["convert", str(out), str(awb), "--to", "agentworldbench"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in awb.read_text().splitlines()]
    assert rows[0]["task"] == "swe" and '"name": "str_replace_editor"' in rows[0]["system_str"]
