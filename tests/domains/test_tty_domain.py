"""The interactive terminal through the framework: keystroke parsing (tmux key names, errors),
the screen scorer, tasks, action types, the consistency subset, the llm reply parser, and real
collection exported with ``agentworld convert`` to AgentWorldBench rows of the public terminal
rows' shape, then imported back (issue 33)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest
from agentworld.core import plugins
from agentworld.core.collect import collect
from agentworld.core.io import read_episodes
from agentworld.core.types import Action, Episode, Observation, Step
from agentworld.domains.tty.analysis import score
from agentworld.domains.tty.domain import FIRST_SCREEN, TtyDomain
from agentworld.domains.tty.keys import ActionError, key_bytes, parse_action, render_action
from agentworld.domains.tty.policies import parse_reply
from agentworld.domains.tty.tasks import KINDS, TtyTaskSampler
from sandboxes import needs_sandbox
from test_gym_envs import checked

AGENTWORLD = str(Path(sys.executable).parent / "agentworld")
# The public rows (QwenLM/Qwen-AgentWorld README "Data Format"; terminal rows' actions are the
# Terminus agent's keystroke lists): an action prompt, and an observation of the screen.
ACTION_PROMPT = re.compile(r"### Turn (\d+)\n\*\*Action:\*\*\n```json\n(\[.*\])\n```", re.DOTALL)
FIELDS = {"task", "id", "prompt", "response", "current_prompt", "system_str", "turn_idx",
          "total_turns"}  # fmt: skip


def test_keys_are_tmux_names_or_text():
    assert [key_bytes(k) for k in ("C-c", "C-d", "Escape", "Enter", "Tab", "BSpace", "M-x")] == [
        b"\x03", b"\x04", b"\x1b", b"\r", b"\t", b"\x7f", b"\x1bx"]
    assert (key_bytes("Up"), key_bytes("Up", application_cursor=True)) == (b"\x1b[A", b"\x1bOA")
    assert key_bytes("ls -l\n") == b"ls -l\r" and key_bytes("C-c\n") == b"C-c\r"  # text, not a key
    items = parse_action('[{"keystrokes": "ls\\n", "duration": 0.1}, {"keystrokes": "C-c"}]')
    assert [(i.keystrokes, i.duration) for i in items] == [("ls\n", 0.1), ("C-c", 1.0)]
    text = render_action(items)
    assert text.startswith("```json\n[\n  {\n") and parse_action(text) == items
    terminus = '{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "q", "duration": 99}]}'
    assert parse_action(terminus)[0].duration == 10.0  # cut as Terminus caps waits


@pytest.mark.parametrize(("text", "error"), [
    ("ls -la", "action is not JSON"),
    ('{"keystrokes": "ls"}', "action must be a JSON list"),
    ("[3]", "action[0] must be an object"),
    ('[{"keystrokes": 5}]', "action[0].keystrokes must be a string, got 5"),
    ('[{"keystrokes": "a", "duration": -1}]', "action[0].duration must be >= 0 seconds, got -1"),
    ('[{"keystrokes": "a", "duration": "1"}]', "action[0].duration must be a number"),
    ('[{"keystrokes": "a", "wait": 1}]', "action[0] has unknown fields ['wait']"),
])  # fmt: skip
def test_malformed_actions_name_what_is_wrong(text, error):
    with pytest.raises(ActionError, match=re.escape(error)):
        parse_action(text)


def test_screen_scorer():
    real = "user@sandbox:~$ ls\na.txt  b.txt\nuser@sandbox:~$"
    assert score(real, Observation(text=real)) == 1.0
    assert score("user@sandbox:~$ ls\na.txt\nuser@sandbox:~$", real) == pytest.approx(0.8 * 4 / 6 + 0.2)
    assert score("user@sandbox:~$ ls\na.txt  b.txt\n>>>", real) == pytest.approx(0.8 * 4 / 6)
    assert score("", real) == 0.0


def test_tasks_policies_types_and_consistency():
    domain = plugins.get_domain("tty")
    assert isinstance(domain, TtyDomain) and plugins.owner("domain", "tty") == "tty"
    assert "agentworld/tty-v0" in gymnasium.registry
    tasks = TtyTaskSampler().sample(14, seed=3)
    assert {t.kind for t in tasks} == set(KINDS) and tasks == TtyTaskSampler().sample(14, seed=3)
    with pytest.raises(ValueError, match="unknown task kinds \\['nope'\\]; known: repl"):
        TtyTaskSampler(("nope",))
    assert set(domain.policies()) >= {"scripted", "random"}
    assert domain.initial_observation(None) == FIRST_SCREEN

    def act(*items):
        return Action(text=render_action(list(items)))

    actions = [act(("python3", 0.05), ("Enter", 0.5)), act(("v = 3 * 4\n", 0.1)),
               act(("print(v)\n", 0.1)), act(("C-d", 0.1)), act(("vi notes.txt\n", 0.3)),
               act(("ihi", 0.1), ("Escape", 0.1), (":wq\n", 0.2)), act(("cat notes.txt\n", 0.1)),
               act(("Up", 0.1)), Action(text="ls")]  # fmt: skip
    assert [domain.action_type(a) for a in actions] == [
        "python3", "text", "text", "keys", "vi", "text", "cat", "keys", "invalid"]
    assert domain.command_families(actions[5]) == {"text", "key:Escape"}
    episode = Episode(id="e", domain="tty", system_prompt="", initial_observation=Observation(text=""),
                      steps=[Step(action=a, observation=Observation(text="")) for a in actions])
    assert domain.consistency_turns(episode) == [2, 6, 7]  # print(v), cat after :wq, Up

    reply = 'I will list.\n```json\n[{"keystrokes": "ls\\n", "duration": 0.1}]\n```'
    assert parse_reply(reply) == Action(text=render_action([("ls\n", 0.1)]))
    assert parse_reply('{"commands": [], "task_complete": true}') is None
    assert parse_reply("DONE") is None and parse_reply("no json here") is None


@needs_sandbox
def test_collect_then_convert_to_public_terminal_rows_and_back(tmp_path):
    domain = plugins.get_domain("tty")
    episodes = collect(domain, len(KINDS), policies={"scripted": 1.0}, seed=0)
    assert all(any(s.reward == 1.0 for s in e.steps) for e in episodes)  # every kind solved
    assert {e.task.kind for e in episodes} == set(KINDS)
    first = episodes[0]
    assert first.initial_observation.text == FIRST_SCREEN
    assert domain.explain(first.steps[0], first.initial_observation.state).startswith("keys: ")

    eps = tmp_path / "eps.jsonl"
    eps.write_text("".join(e.model_dump_json() + "\n" for e in episodes))
    rows_path, back = tmp_path / "rows.jsonl", tmp_path / "back.jsonl"
    for source, target in ((eps, rows_path), (rows_path, back)):
        run = subprocess.run([AGENTWORLD, "convert", str(source), str(target)],
                             capture_output=True, text=True, timeout=300)  # fmt: skip
        assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()]
    assert len(rows) == sum(len(e.steps) for e in episodes)
    for row in rows:
        assert FIELDS <= set(row) and row["task"] == "tty" and isinstance(row["id"], int)
        assert row["current_prompt"] == row["prompt"][row["turn_idx"] - 1]
        for k, (prompt, response) in enumerate(zip(row["prompt"], row["response"]), start=1):
            match = ACTION_PROMPT.fullmatch(prompt)
            assert match and int(match.group(1)) == k, prompt
            items = json.loads(match.group(2))
            assert all(set(i) == {"keystrokes", "duration"} and isinstance(i["keystrokes"], str)
                       and isinstance(i["duration"], int | float) for i in items)  # fmt: skip
            assert response.startswith("**Environment Observation:**\n")
            screen = response.split("\n", 1)[1].split("\n")
            assert len(screen) <= 24 and all(r == r.rstrip() and len(r) <= 80 for r in screen)
    again = read_episodes(str(back))
    assert [(e.id, e.domain, e.task) for e in again] == [(e.id, e.domain, e.task) for e in episodes]
    assert [[(s.action.text, s.observation.text, s.reward) for s in e.steps] for e in again] == [
        [(s.action.text, s.observation.text, s.reward) for s in e.steps] for e in episodes]


@needs_sandbox
def test_tty_env_by_id_passes_check_env_and_hides_privileged_state():
    checked("agentworld/tty-v0")
    env = gymnasium.make("agentworld/tty-v0", max_steps=2)
    try:
        obs, info = env.reset(seed=7)
        assert obs == FIRST_SCREEN and obs in env.observation_space
        assert env.reset(seed=7)[1]["task_id"] == info["task_id"] != env.reset(seed=8)[1]["task_id"]
        obs, _, _, truncated, info = env.step(render_action([("echo hi\n", 0.1)]))
        assert obs.split("\n")[-2:] == ["hi", "user@sandbox:~$"] and set(obs.state) == {"cursor"}
        assert not truncated and "files" not in info
        assert set(env.unwrapped.privileged_state()) == {"cursor", "program", "alternate", "files"}
    finally:
        env.close()
