"""Where the project's OpenAI-compatible clients send keys (the security review of issue 30):
nowhere without a configured endpoint, and a key only to the URL it was configured with.

Each client (the ``openai`` sim backend, the ``llm_judge`` reward, ``agentworld bench judge``,
the SFT teacher) talks over real HTTP to loopback servers that record the ``Authorization``
header; an explicitly given local server works without any key.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from agentworld.app.cli import app
from agentworld.core.endpoints import resolve_endpoint
from agentworld.core.types import Action, Episode, Observation, Step
from agentworld.rewards.bench.cli import register
from agentworld.rewards.judge import LLMJudge
from agentworld.sim.backends.openai_client import OpenAIWorldModel
from agentworld.trainers.training.config import TeacherSettings
from agentworld.trainers.world_model.reasoning import teacher_rationales
from loopback import chat_route, serve
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent / "core"))
from awb_records import card_rows, write_rows  # noqa: E402

if not any(g.name == "bench" for g in app.registered_groups):
    register(app)  # as main() does through the register_commands hook

VARS = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "AGENTWORLD_OPENAI_BASE_URL",
        "AGENTWORLD_OPENAI_API_KEY", "AGENTWORLD_JUDGE_BASE_URL", "AGENTWORLD_JUDGE_API_KEY",
        "AGENTWORLD_JUDGE_MODEL", "MY_TEACHER_KEY")
SCORES = '{"format": 5, "factuality": 4, "consistency": 4, "realism": 3, "quality": 4}'
NO_KEY = "Bearer EMPTY"  # what the openai client sends without a key (local servers accept it)


@pytest.fixture
def env(monkeypatch):
    for name in VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@contextmanager
def recording_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An OpenAI-compatible server on 127.0.0.1 serving model ``m`` (``GET /v1/models``) that
    answers every chat with the five judge scores; yields its ``/v1`` URL and its requests."""
    chat = chat_route(lambda request: SCORES)

    def route(path: str, headers: dict[str, str], body: bytes) -> tuple[int, str, bytes]:
        if path.rstrip("/") == "/v1/models":
            models = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "t"}]}
            return 200, "application/json", json.dumps(models).encode()
        return chat(path, headers, body)

    with serve(route) as (url, seen):
        yield f"{url}/v1", seen


def keys(seen: list[dict[str, Any]]) -> list[str | None]:
    """The ``Authorization`` header of each recorded request, in order."""
    return [r["headers"].get("authorization") for r in seen]


def test_resolve_endpoint_pairs_each_key_with_its_url():
    pairs = [("AW_URL", "AW_KEY"), ("OPENAI_BASE_URL", "OPENAI_API_KEY")]
    env = {"OPENAI_API_KEY": "sk", "AW_KEY": "aw"}
    assert resolve_endpoint("c", "http://a/v1", None, pairs, environ=env) == ("http://a/v1", None)
    env |= {"OPENAI_BASE_URL": "http://a/v1/"}
    assert resolve_endpoint("c", "http://a/v1", None, pairs, environ=env) == ("http://a/v1", "sk")
    assert resolve_endpoint("c", None, None, pairs, environ=env) == ("http://a/v1/", "sk")
    env |= {"AW_URL": "http://b/v1"}  # the first pair names the URL; its key goes with it
    assert resolve_endpoint("c", None, None, pairs, environ=env) == ("http://b/v1", "aw")
    assert resolve_endpoint("c", "http://b/v1", "x", pairs, environ=env) == ("http://b/v1", "x")
    assert resolve_endpoint("c", "http://c/v1", None, pairs, environ=env) == ("http://c/v1", None)
    with pytest.raises(ValueError, match="^c sends api_key only to the base_url given with it; "
                                         "pass base_url too$"):
        resolve_endpoint("c", None, "x", pairs, environ=env)
    with pytest.raises(ValueError, match=r"^c has no endpoint: set AW_URL or OPENAI_BASE_URL "
                                         r"\(or pass base_url\) to an OpenAI-compatible"):
        resolve_endpoint("c", None, None, pairs, environ={"OPENAI_API_KEY": "sk"})


def test_the_openai_backend_sends_a_key_only_to_its_url(env):
    def predict(**options: Any) -> None:
        model = OpenAIWorldModel("m", retries=0, max_tokens=4, **options)
        try:
            model.predict([[{"role": "user", "content": "ls"}]])
        finally:
            model.close()

    with recording_server() as (url, seen), recording_server() as (other, seen_other):
        env.setenv("OPENAI_API_KEY", "sk-openai")
        predict(base_url=url)  # an explicit local server: works, and gets no key
        env.setenv("OPENAI_BASE_URL", other)
        predict(base_url=url)  # the OpenAI key is for another server
        predict()  # ... which is the endpoint when none is given
        env.setenv("OPENAI_BASE_URL", f"{url}/")
        predict(base_url=url)
        env.setenv("AGENTWORLD_OPENAI_BASE_URL", url)
        env.setenv("AGENTWORLD_OPENAI_API_KEY", "aw-key")
        predict()  # the agentworld pair comes first
        predict(base_url=other, api_key="explicit")
    assert keys(seen) == [NO_KEY, NO_KEY, "Bearer sk-openai", "Bearer aw-key"]
    assert keys(seen_other) == ["Bearer sk-openai", "Bearer explicit"]
    env.delenv("AGENTWORLD_OPENAI_BASE_URL")
    env.delenv("OPENAI_BASE_URL")
    with pytest.raises(ValueError, match="^the openai backend has no endpoint: set "
                                         "AGENTWORLD_OPENAI_BASE_URL or OPENAI_BASE_URL"):
        OpenAIWorldModel("m")  # no default endpoint: the key in OPENAI_API_KEY goes nowhere
    with pytest.raises(ValueError, match="^the openai backend sends api_key only to the base_url"):
        OpenAIWorldModel("m", api_key="k")


def test_the_judge_sends_a_key_only_to_its_url(env):
    with recording_server() as (url, seen), recording_server() as (other, seen_other):
        env.setenv("OPENAI_API_KEY", "sk-openai")
        env.setenv("AGENTWORLD_JUDGE_API_KEY", "judge-key")
        judge = LLMJudge("m", base_url=url, retries=0)  # GET /models, then one chat
        assert judge(["a"], ["b"], [{}]) == [pytest.approx(0.75)]
        env.setenv("OPENAI_BASE_URL", url)
        LLMJudge(retries=0)  # the endpoint from OPENAI_BASE_URL, with its key
        env.setenv("AGENTWORLD_JUDGE_BASE_URL", other)
        LLMJudge(retries=0)  # the judge's own pair comes first
        LLMJudge(base_url=other, api_key="explicit", retries=0)
    assert keys(seen) == [NO_KEY, NO_KEY, "Bearer sk-openai"]
    assert keys(seen_other) == ["Bearer judge-key", "Bearer explicit"]
    env.delenv("AGENTWORLD_JUDGE_BASE_URL")
    env.delenv("OPENAI_BASE_URL")
    with pytest.raises(ValueError, match="^llm_judge has no endpoint: set "
                                         "AGENTWORLD_JUDGE_BASE_URL or OPENAI_BASE_URL"):
        LLMJudge("m")


def test_bench_judge_sends_a_key_only_to_its_url(env, tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    write_rows(data / "mcp_test.jsonl", card_rows("mcp", 4, 1))
    out.mkdir()
    (out / "predictions.jsonl").write_text(
        json.dumps({"task": "mcp", "id": 4, "turn_idx": 1, "gen": "{}"}) + "\n")

    def judge(url: str) -> None:
        (out / "judged.jsonl").unlink(missing_ok=True)
        result = CliRunner().invoke(app, ["bench", "judge", str(data), "--out", str(out),
                                          "--judge-base-url", url, "--retries", "0"],
                                    env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output + repr(result.exception)
        [judged] = map(json.loads, (out / "judged.jsonl").read_text().splitlines())
        assert not judged["failed"]

    with recording_server() as (url, seen):
        env.setenv("OPENAI_API_KEY", "sk-openai")
        env.setenv("AGENTWORLD_JUDGE_API_KEY", "judge-key")
        judge(url)  # neither key was configured with this URL
        env.setenv("OPENAI_BASE_URL", url)
        judge(url)
        env.setenv("AGENTWORLD_JUDGE_BASE_URL", f"{url}/")
        judge(url)
    # each run: GET /models, then one chat
    assert keys(seen) == [NO_KEY] * 2 + ["Bearer sk-openai"] * 2 + ["Bearer judge-key"] * 2


def test_the_teacher_sends_a_key_only_to_its_url(env):
    prompt = Observation(text="user@sandbox:~$ ")
    episodes = [Episode(id="e", domain="terminal", initial_observation=prompt,
                        steps=[Step(action=Action(text="true"), observation=prompt)])]
    with recording_server() as (url, seen):
        env.setenv("OPENAI_API_KEY", "sk-openai")
        settings = TeacherSettings(base_url=url, model="m", concurrency=1)
        assert teacher_rationales(episodes, settings) == [[SCORES]]
        env.setenv("OPENAI_BASE_URL", url)
        teacher_rationales(episodes, settings)
        env.setenv("MY_TEACHER_KEY", "teacher-key")  # a variable named together with base_url
        teacher_rationales(episodes, settings.model_copy(update={"api_key_env": "MY_TEACHER_KEY"}))
    assert keys(seen) == [NO_KEY, "Bearer sk-openai", "Bearer teacher-key"]
