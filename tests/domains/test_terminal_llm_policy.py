"""The ``llm`` collection policy against a real loopback HTTP server speaking the OpenAI Chat
Completions API, driving real sandboxed bash."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from agentworld.core.collect import collect
from agentworld.domains.terminal.domain import TerminalDomain
from agentworld.domains.terminal.llm_policy import LLMPolicy, LLMServerError, parse_command
from loopback import chat_route, serve
from sandboxes import needs_sandbox

HEREDOC = "cat >> a.txt <<'EOF'\nthere $x\nEOF"
SCRIPT = ["x=6", "echo $((x * 7))", "```bash\necho hi > a.txt\n```", "$ cat a.txt",
          f"{HEREDOC}\nThis appends a line.", "```sh\nwc -l a.txt\ncat a.txt\n```", "DONE"]
MODELS = {"object": "list", "data": [{"id": "agent-1", "object": "model"}]}


@contextmanager
def agent_server(api_key: str | None = None) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A chat server on 127.0.0.1 whose model answers ``SCRIPT[turn]`` (turn = number of
    assistant messages in the request); yields ``(base_url, accepted request bodies)``."""
    seen: list[dict[str, Any]] = []

    def answer(request: dict[str, Any]) -> str:
        seen.append(request)
        turn = sum(m["role"] == "assistant" for m in request["messages"])
        return SCRIPT[turn] if turn < len(SCRIPT) else "DONE"

    chat = chat_route(answer)

    def route(path: str, headers: dict[str, str], body: bytes) -> tuple[int, str, bytes]:
        if path.rstrip("/") == "/v1/models":
            return 200, "application/json", json.dumps(MODELS).encode()
        if api_key and headers.get("authorization") != f"Bearer {api_key}":
            return 401, "application/json", b'{"error": {"message": "bad key"}}'
        return chat(path, headers, body)

    with serve(route) as (url, _):
        yield f"{url}/v1", seen


def test_parse_command():
    assert parse_command("ls -l\nthis lists files") == "ls -l"
    assert parse_command("Sure:\n```bash\n$ cat a.txt\n```") == "cat a.txt"
    assert parse_command("  DONE. ") is None and parse_command("") is None
    # a here-document comes with its body; a code block is one action, whole
    reply = "cat > f.py <<'EOF'\nprint(1)\n\tx\nEOF\nThis writes f.py.\nls"
    assert parse_command(reply) == "cat > f.py <<'EOF'\nprint(1)\n\tx\nEOF"
    assert parse_command("cat <<-A <<B\n\tA\nb\nB\nls") == "cat <<-A <<B\n\tA\nb\nB"
    assert parse_command("python3 - <<PY\nprint(2)\n") == "python3 - <<PY\nprint(2)"
    assert parse_command("```bash\n$ for i in 1 2; do\n  echo $i\ndone\n```\nok") == (
        "for i in 1 2; do\n  echo $i\ndone"
    )
    assert parse_command("echo '<<EOF'\nmore prose") == "echo '<<EOF'"


@needs_sandbox
def test_llm_policy_collects_real_episodes(monkeypatch):
    with agent_server() as (url, seen):
        monkeypatch.setenv("AGENTWORLD_LLM_BASE_URL", url)
        monkeypatch.delenv("AGENTWORLD_LLM_MODEL", raising=False)
        episodes = collect(TerminalDomain(), 2, policies={"llm": 1.0}, seed=5, workers=1)
    for episode in episodes:
        assert episode.metadata["policy"] == "llm"
        assert [s.action.text for s in episode.steps] == [
            "x=6", "echo $((x * 7))", "echo hi > a.txt", "cat a.txt", HEREDOC,
            "wc -l a.txt\ncat a.txt",
        ]
        outputs = [TerminalDomain().output_text(s.observation) for s in episode.steps]
        assert outputs == ["", "42\n", "", "hi\n", "", "2 a.txt\nhi\nthere $x\n"]
    # one request a step, and one more (answered DONE) where the task was not yet done
    asked = sum(len(e.steps) + (not e.steps[-1].terminated) for e in episodes)
    assert len(seen) == asked and all(b["model"] == "agent-1" for b in seen)
    # the request holds the task and everything the terminal showed so far
    last = seen[4]["messages"]
    assert last[0]["role"] == "system" and episodes[0].task.instruction in last[1]["content"]
    assert [m["content"] for m in last if m["role"] == "user"][-1].startswith("hi\n")
    assert seen[0]["seed"] != seen[1]["seed"]


def test_llm_policy_errors_name_the_server():
    with agent_server(api_key="s3cret") as (url, _):
        with pytest.raises(LLMServerError, match="answered 401"):
            LLMPolicy(base_url=url, model="m").act(None, [])
        assert LLMPolicy(base_url=url, model="m", api_key="s3cret").act(None, []).text == "x=6"
    with pytest.raises(LLMServerError, match=r"cannot reach http://127\.0\.0\.1:9/v1/models"):
        LLMPolicy(base_url="http://127.0.0.1:9/v1", timeout_s=5).act(None, [])
