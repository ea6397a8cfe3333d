"""The mcp domain's scorer, action types and consistency turns, on real episodes."""

from __future__ import annotations

import pytest
from agentworld.core.collect import run_episode
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.mcp.calls import tool_action
from agentworld.domains.mcp.domain import McpDomain


class Calls:
    """A policy that plays a fixed list of actions."""

    name = "calls"

    def __init__(self, actions):
        self.actions = list(actions)

    def act(self, task, history):
        done = sum(isinstance(h, Action) for h in history)
        return self.actions[done] if done < len(self.actions) else None


def test_score_is_json_field_f1_else_line_f1():
    domain = McpDomain()
    ref = Observation(text='{\n  "title": "a",\n  "tags": ["x", "y"],\n  "revision": 1\n}')
    assert domain.score('{"revision": 1, "tags": ["x", "y"], "title": "a"}', ref) == 1.0
    # 3 of 4 leaves right: precision 3/4, recall 3/4
    assert domain.score('{"title": "a", "tags": ["x", "z"], "revision": 1}', ref) == pytest.approx(0.75)
    assert domain.score('{"title": 1}', ref) == 0.0
    assert domain.score("**Environment Observation:**\n" + ref.text, ref) == 1.0
    err = Observation(text="Error executing tool read_note: no note titled 'b'")
    assert domain.score("Error executing tool  read_note: no note titled 'b'", err) == 1.0
    assert domain.score("Unknown tool: read_note", err) == 0.0
    assert domain.score("", Observation(text="")) == 1.0


def test_action_type_and_families_are_the_tool_name():
    domain = McpDomain()
    assert domain.action_type(tool_action("read_note", {"title": "a"})) == "read_note"
    assert domain.action_type(Action(text='```json\n{"name": "x", "arguments": {}}\n```')) == "x"
    assert domain.action_type(Action(text="read_note(a)")) == "malformed"
    assert domain.command_families(tool_action("list_todos", {})) == {"list_todos"}


def test_consistency_turns_are_reads_of_what_the_episode_wrote():
    domain = McpDomain()
    task = Task(id="t", domain="mcp", instruction="play", setup={
        "server": "notes", "calls": [{"name": "create_note",
                                      "arguments": {"title": "old", "body": "from setup"}}]})
    actions = [
        tool_action("read_note", {"title": "old"}),            # 0: set-up state only
        tool_action("create_note", {"title": "new", "body": "fresh words"}),  # 1: the write
        tool_action("read_note", {"title": "new"}),            # 2: reads the write
        tool_action("read_note", {"title": "old"}),            # 3: untouched note
        tool_action("search_notes", {"query": "fresh"}),       # 4: shows the new body
        tool_action("list_notes", {}),                         # 5: whole-collection read
        Action(text="nonsense"),                               # 6: malformed
    ]
    env = domain.make_env()
    try:
        episode = run_episode(domain, env, task, Calls(actions), seed=0, max_steps=10)
    finally:
        env.close()
    assert episode.initial_observation.state["data"]["notes"][0]["title"] == "old"
    assert domain.consistency_turns(episode) == [2, 4, 5]
