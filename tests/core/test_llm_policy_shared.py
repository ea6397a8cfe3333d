"""The shared ``llm`` policy (agentworld.core.llm_policy) acts in a tool domain: it sends the
domain's agent prompt to a real OpenAI-compatible server on loopback and turns JSON tool
calls into actions."""

from __future__ import annotations

import json

import pytest
from agentworld.core.llm_policy import LLMPolicy, parse_tool_call
from agentworld.core.types import Action, Observation, Task
from loopback import serve

CALLS = [
    'Sure.\n```json\n{"name": "notes_create", "arguments": {"title": "a", "body": "x"}}\n```',
    '{"name": "notes_read", "arguments": {"title": "a"}}',
    "DONE",
]


def test_parse_tool_call_reads_the_first_call() -> None:
    action = parse_tool_call('I will call {"name": "search", "arguments": {"q": "bm25"}} now')
    assert action == Action(text='{"name": "search", "arguments": {"q": "bm25"}}', name="search",
                            arguments={"q": "bm25"})  # fmt: skip
    assert parse_tool_call('{"name": "list"}').arguments == {}
    for stop in ("DONE", "", "no call here", '{"arguments": {}}', '{"name": "x", "arguments": 3}'):
        assert parse_tool_call(stop) is None, stop


def test_the_shared_policy_acts_in_a_tool_domain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    replies = iter(CALLS)

    def route(path: str, headers: dict[str, str], body: bytes) -> tuple[int, str, bytes]:
        if path.endswith("/models"):
            return 200, "application/json", b'{"data": [{"id": "m"}]}'
        answer = {"choices": [{"message": {"role": "assistant", "content": next(replies)}}]}
        return 200, "application/json", json.dumps(answer).encode()

    task = Task(id="t", domain="notes", instruction="write a note, read it back")
    with serve(route) as (url, seen):
        policy = LLMPolicy("You call note tools.", seed=3, base_url=url + "/v1")
        policy.reset(7)
        history: list[Observation | Action] = [Observation(text="tools: notes_create, notes_read")]
        actions = []
        while (action := policy.act(task, history)) is not None:
            actions.append(action)
            history += [action, Observation(text='{"ok": true}')]
    assert [a.name for a in actions] == ["notes_create", "notes_read"]
    assert actions[0].arguments == {"title": "a", "body": "x"}
    chats = [json.loads(r["body"]) for r in seen if r["path"].endswith("/chat/completions")]
    assert chats[0]["messages"][0] == {"role": "system", "content": "You call note tools."}
    assert chats[0]["messages"][1]["content"].startswith("Task: write a note, read it back")
    assert [c["seed"] for c in chats] == [7000, 7001, 7002]
    assert "authorization" not in seen[0]["headers"]
