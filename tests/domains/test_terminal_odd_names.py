"""File names that are not UTF-8 (issue 30): an agent's ``touch $'\\xff'`` in a real sandboxed
terminal is recorded as a visible escape, and the collection goes on to write its data set."""

from __future__ import annotations

import json

from agentworld.core.collect import collect
from agentworld.core.escapes import json_line, visible
from agentworld.core.io import read_episodes, write_episodes
from agentworld.core.types import Action
from agentworld.domains.terminal.domain import TerminalDomain
from sandboxes import needs_sandbox

COMMANDS = ["touch $'\\xff' $'a\\xfeb' é", "ls"]


class Fixed:
    """A policy that runs :data:`COMMANDS`, then stops."""

    name = "fixed"

    def act(self, task, history):
        i = sum(isinstance(item, Action) for item in history)
        return Action(text=COMMANDS[i]) if i < len(COMMANDS) else None


class OddNames(TerminalDomain):
    def policies(self):
        return {"fixed": Fixed()}


@needs_sandbox
def test_undecodable_names_are_recorded_escaped(tmp_path):
    part, out = tmp_path / "x.jsonl.part", tmp_path / "x.jsonl"
    episodes = collect(OddNames(), 2, policies={"fixed": 1.0}, workers=1, part=str(part))
    write_episodes(str(out), episodes)
    back = read_episodes(str(out))
    for episode in (episodes[0], back[0]):
        files = episode.steps[0].observation.state["files"]
        assert files["\\xff"] == files["a\\xfeb"] == files["é"] == "0B da39a3ee5e"  # empty files
        assert not any("\udcff" in name or "\udcfe" in name for name in files)
    assert back == episodes  # what was written is what was collected
    # the part file holds the same escaped names (one header line, two episodes)
    lines = part.read_bytes().decode("utf-8").splitlines()
    assert len(lines) == 3 and '"\\\\xff": "0B da39a3ee5e"' in lines[1]
    # what the agent saw: bash's own quoting of the names
    assert "''$'\\377'" in back[0].steps[1].observation.text


def test_visible_escapes():
    assert visible("a\udcffb") == "a\\xffb" and visible("é\ud800") == "é\\ud800"
    same = "plain é"
    assert visible(same) is same
    assert json.loads(json_line({"k\udcfe": ["\udcff", 1]})) == {"k\\xfe": ["\\xff", 1]}


@needs_sandbox
def test_an_action_with_a_lone_surrogate_is_recorded_escaped(tmp_path):
    # a model's JSON answer may carry "\udcff"; the episode still writes
    COMMANDS.append("echo '\udcff'")
    try:
        [episode] = collect(OddNames(), 1, policies={"fixed": 1.0}, workers=1)
    finally:
        COMMANDS.pop()
    assert episode.steps[-1].action.text == "echo '\\xff'"
    write_episodes(str(tmp_path / "a.jsonl"), [episode])
    assert read_episodes(str(tmp_path / "a.jsonl"))[0].steps[-1].action.text == "echo '\\xff'"
