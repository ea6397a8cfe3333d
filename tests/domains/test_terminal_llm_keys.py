"""Where the ``llm`` policy sends requests and keys (issue 30): nowhere without a configured
endpoint, a key only to the URL it was configured with (a real loopback HTTP server records
the ``Authorization`` header), and a failed ``collect`` leaves nothing that blocks the next."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from agentworld.app.cli import app
from agentworld.core.io import read_episodes
from agentworld.core.partfile import PartFileError
from agentworld.domains.terminal.llm_policy import LLMPolicy, LLMServerError
from loopback import chat_route, serve
from sandboxes import needs_sandbox
from typer.testing import CliRunner

VARS = ("AGENTWORLD_LLM_BASE_URL", "AGENTWORLD_LLM_API_KEY", "AGENTWORLD_LLM_MODEL",
        "OPENAI_BASE_URL", "OPENAI_API_KEY")


@pytest.fixture
def env(monkeypatch):
    for name in VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@contextmanager
def recording_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An OpenAI-compatible chat server on 127.0.0.1 whose model says ``DONE``; yields its
    ``/v1`` URL and the requests it received."""
    with serve(chat_route(lambda request: "DONE")) as (url, seen):
        yield f"{url}/v1", seen


def test_a_key_goes_only_to_the_url_it_was_configured_for(env):
    with recording_server() as (url, seen), recording_server() as (other, seen_other):
        env.setenv("OPENAI_API_KEY", "sk-openai")
        env.setenv("AGENTWORLD_LLM_BASE_URL", url)
        assert LLMPolicy(model="m").act(None, []) is None  # OPENAI_API_KEY alone: not for it
        env.setenv("OPENAI_BASE_URL", other)
        LLMPolicy(model="m").act(None, [])  # the OpenAI key is for another server
        env.setenv("OPENAI_BASE_URL", f"{url}/")
        LLMPolicy(model="m").act(None, [])  # ... and now for this one
        env.setenv("AGENTWORLD_LLM_API_KEY", "aw-key")
        LLMPolicy(model="m").act(None, [])  # the agentworld pair comes first
        LLMPolicy(base_url=other, api_key="explicit", model="m").act(None, [])
        LLMPolicy(base_url=other, model="m").act(None, [])  # no key configured with `other`
    assert [r["headers"].get("authorization") for r in seen] == [
        None, None, "Bearer sk-openai", "Bearer aw-key"]
    assert [r["headers"].get("authorization") for r in seen_other] == ["Bearer explicit", None]
    with pytest.raises(ValueError, match="sends api_key only to the base_url given with it"):
        LLMPolicy(api_key="k")


def test_no_endpoint_no_llm_policy(env, tmp_path):
    with pytest.raises(ValueError, match="^the llm policy has no endpoint: set AGENTWORLD_LLM_BASE_URL"):
        LLMPolicy()
    clean = {k: v for k, v in os.environ.items() if k not in VARS} | {
        "OPENAI_API_KEY": "sk-openai", "COLUMNS": "300"}
    run = subprocess.run([sys.executable, "-c", "from agentworld.app.cli import main; main()",
                          "collect", "--episodes", "1", "--policy", "llm=1", "--out", "x.jsonl"],
                         env=clean, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert (run.stdout + run.stderr).splitlines() == [
        "error: domain 'terminal' has no policy ['llm'] here; valid: ['handwritten', 'long', 'random', 'real', 'scripted'] "
        "(`agentworld domains` tells what its policies need)"]
    assert list(tmp_path.iterdir()) == []  # refused before any file was made


@needs_sandbox
def test_the_default_collection_contacts_no_server(env, tmp_path):
    env.setenv("OPENAI_API_KEY", "sk-openai")
    listener = socket.socket()
    try:  # the old default endpoint: whoever listens there got the key
        listener.bind(("127.0.0.1", 8000))
        listener.listen(4)
    except OSError:
        listener.close()
        listener = None
    out = tmp_path / "x.jsonl"
    try:
        done = CliRunner().invoke(app, ["collect", "--episodes", "4", "--out", str(out)])
        assert done.exit_code == 0, done.output
        if listener is not None:
            listener.setblocking(False)
            with pytest.raises(BlockingIOError):
                listener.accept()  # nobody connected
    finally:
        if listener is not None:
            listener.close()
    # the default mix: every policy but the evaluation sets (handwritten)
    assert {e.metadata["policy"] for e in read_episodes(str(out))} <= {"scripted", "random", "real"}


@needs_sandbox
def test_a_failed_collect_does_not_block_the_corrected_one(env, tmp_path):
    env.setenv("AGENTWORLD_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    out = tmp_path / "x.jsonl"
    part = Path(f"{out}.part")

    def run(*args: str):
        return CliRunner().invoke(app, ["collect", "--episodes", "2", "--workers", "1",
                                        "--out", str(out), *args])

    failed = run("--policy", "llm=1")
    assert isinstance(failed.exception, LLMServerError)  # a ConnectionError: one line
    assert str(failed.exception).startswith("the llm policy cannot reach http://127.0.0.1:9/v1/models")
    assert not part.exists()  # no episode finished: nothing to resume, nothing left
    # a run killed before its first episode left a header of other settings: started over
    part.write_text(json.dumps({"agentworld_part": 1, "settings": {"episodes": 7}}) + "\n")
    assert run("--policy", "scripted=1").exit_code == 0 and not part.exists()
    # a run that fails after finishing an episode keeps it for a resume ...
    out.unlink()
    failed = run("--policy", "llm=1", "--policy", "scripted=1", "--seed", "1")  # scripted first
    assert isinstance(failed.exception, LLMServerError)
    assert len(part.read_text().splitlines()) == 2  # the header and the scripted episode
    # ... and another command is told how to start over instead
    refused = run("--policy", "random=1")
    assert isinstance(refused.exception, PartFileError)
    assert str(refused.exception).startswith(f"{part} holds episodes collected with other settings")
    assert str(refused.exception).endswith("delete the file to start over (--overwrite deletes it)")
    done = run("--policy", "random=1", "--overwrite")
    assert done.exit_code == 0 and not part.exists()
    assert [e.metadata["policy"] for e in read_episodes(str(out))] == ["random", "random"]
