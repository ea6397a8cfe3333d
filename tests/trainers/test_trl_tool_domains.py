"""The TRL adapter with the tool-call domains (DomainBase subclasses without an action list):
``tool_env_class`` gives them the free-text tool, and the tool drives their real environments
(a real stdio MCP server; the real BM25 search engine)."""

from __future__ import annotations

import json

from agentworld.core.plugins import get_domain
from agentworld.trainers.agents.trl_env import (
    environment_factory,
    episode_return_reward,
    task_rows,
    tool_env_class,
)


def call(name: str, **arguments: object) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def test_mcp_is_one_command_tool_on_a_real_server() -> None:
    domain = get_domain("mcp")
    assert tool_env_class(domain).tool_name == "mcp"
    env = environment_factory(domain)()
    try:
        [task] = [t for t in domain.tasks().sample(8, seed=0) if t.setup.get("server") == "todo"][:1]
        start = env.reset(**task_rows([task])[0])
        assert start.startswith("\n\nConnected to MCP server 'todo'.")
        listed = json.loads(env.mcp(command=call("list_todos")))
        assert listed["count"] == len(listed["todos"]) >= 1
        added = env.mcp(command=call("add_todo", title="water plants", due="2025-04-01"))
        assert "water plants" in added
        relisted = json.loads(env.mcp(command=call("list_todos")))
        assert relisted["count"] == listed["count"] + 1  # the server kept the new item
        assert env.num_steps == 3 and env.actions[0] == call("list_todos")
    finally:
        env.env.close()


def test_search_is_one_command_tool_on_the_real_engine() -> None:
    domain = get_domain("search")
    env = environment_factory(domain)()
    try:
        [task] = domain.tasks().sample(1, seed=0)
        start = env.reset(**task_rows([task])[0])
        assert start == "\n\n" + task.instruction
        hits = env.search(command=call("web_search", query="Translate a shell PATTERN to a regular expression"))
        assert "https://docs.python.org/3/library/fnmatch.html#fnmatch.translate" in hits
        env.search(command=call("answer", answer="fnmatch.translate"))
        assert env.done and env.end_reason == "terminated"
        assert episode_return_reward(environments=[env]) == [1.0]
    finally:
        env.env.close()
