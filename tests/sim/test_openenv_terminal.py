"""`agentworld serve --real`: the OpenEnv protocol over the real sandboxed terminal, driven
by openenv's own WebSocket client; sessions, capacity and bad input over HTTP and WebSocket."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

pytest.importorskip("openenv")
from agentworld.core.plugins import get_domain
from agentworld.sim.openenv import RealEnvFactory, create_app
from agentworld.sim.server.thread import ServerThread
from openenv.core.generic_client import GenericEnvClient

try:
    from agentworld.domains.terminal.sandbox import Limits, detect_sandbox

    detect_sandbox()
except (ImportError, RuntimeError) as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"no terminal sandbox: {exc}", allow_module_level=True)

PROMPT = "user@sandbox:~$ "


@pytest.fixture(scope="module")
def server():
    factory = RealEnvFactory(
        get_domain("terminal"), max_steps=3, limits=Limits(command_timeout_s=2.0)
    )
    # every slot for the one (loopback) client: these tests reach the global capacity
    app = create_app(factory, name="terminal", max_sessions=2, max_ws_per_client=2)
    with ServerThread(app) as thread:
        yield thread


def url(server: ServerThread) -> str:
    return f"http://{server.host}:{server.port}"


def test_openenv_client_runs_a_real_terminal_episode(server: ServerThread) -> None:
    with GenericEnvClient(base_url=url(server)).sync() as env:
        result = env.reset(seed=0)
        assert result.observation["text"] == PROMPT and result.done is False
        assert "root" not in result.metadata  # the host path of the episode root stays here
        assert result.reward is None
        result = env.step({"text": "mkdir a && ls"})
        assert result.observation["text"] == f"a\n{PROMPT}"
        assert result.metadata["exit_code"] == 0
        assert result.observation["metadata"] == result.metadata  # OpenEnv repeats it
        assert "state" not in result.metadata  # the file-state snapshot stays on the server
        assert "agentworld-ep-" not in json.dumps(result.observation)  # no host path
        assert (result.reward, result.done) == (0.0, False)
        result = env.step({"text": "ls nothere"})
        assert result.observation["text"].startswith("ls: cannot access 'nothere'")
        assert result.metadata["exit_code"] == 2
        result = env.step({"text": "pwd"})
        assert result.observation["text"] == f"/home/agent\n{PROMPT}"
        assert result.done is True and result.metadata["truncated"] is True
        state = env.state()
        assert state["step_count"] == 3 and state["done"] is True
        assert state["domain"] == "terminal" and state["simulated"] is False
        with pytest.raises(RuntimeError, match="reset first"):
            env.step({"text": "ls"})  # the episode is over: an error reply, no crash
        assert env.reset().observation["text"] == PROMPT  # the same session goes on
        assert env.step({"text": "ls"}).observation["text"] == PROMPT  # fresh sandbox root


def test_concurrent_sessions_are_isolated_and_capacity_is_refused(server: ServerThread) -> None:
    async def run() -> None:
        async with (
            GenericEnvClient(base_url=url(server)) as a,
            GenericEnvClient(base_url=url(server)) as b,
        ):
            await asyncio.gather(a.reset(), b.reset())
            made, listed = await asyncio.gather(
                a.step({"text": "touch only_a && ls"}), b.step({"text": "mkdir only_b && ls"})
            )
            assert made.observation["text"] == f"only_a\n{PROMPT}"
            assert listed.observation["text"] == f"only_b\n{PROMPT}"
            state_a, state_b = await asyncio.gather(a.state(), b.state())
            assert state_a["session_id"] != state_b["session_id"]
            assert state_a["episode_id"] != state_b["episode_id"]
            assert (await b.step({"text": "ls"})).observation["text"] == f"only_b\n{PROMPT}"
            assert (await a.state())["step_count"] == 1  # b's steps are not counted for a

            # max_sessions=2: a third WebSocket session and a new HTTP session are refused
            async with httpx.AsyncClient(base_url=url(server)) as http:
                counts = (await http.get("/sessions")).json()
                assert counts == {"active": 2, "max": 2, "websocket": 2, "http": 0, "one-shot": 0}
                refused = await http.post("/sessions", json={})
                assert refused.status_code == 503 and "capacity" in refused.json()["detail"]
            with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                async with GenericEnvClient(base_url=url(server)) as c:
                    await c.reset()
            assert (await a.step({"text": "ls"})).observation["text"] == f"only_a\n{PROMPT}"

    asyncio.run(run())


def test_bad_input_gets_4xx_while_another_session_continues(server: ServerThread) -> None:
    http = httpx.Client(base_url=url(server))
    with GenericEnvClient(base_url=url(server)).sync() as env:
        env.reset()
        env.step({"text": "echo hi > f"})

        unknown = http.post("/step", json={"session_id": "nope", "action": {"text": "ls"}})
        assert unknown.status_code == 404 and "unknown session 'nope'" in unknown.json()["detail"]
        assert http.get("/state", params={"session_id": "nope"}).status_code == 404
        assert http.delete("/sessions/nope").status_code == 404

        malformed = http.post("/step", json={"action": {"command": "ls"}})
        assert malformed.status_code == 422
        assert "malformed action" in malformed.json()["detail"]
        assert "text" in malformed.json()["detail"]  # names the missing field
        assert http.post("/step", json={"action": "ls"}).status_code == 422
        assert http.post("/reset", json={"seed": -1}).status_code == 422
        assert http.post("/reset", json={"sed": 1}).status_code == 422
        assert (
            http.post(
                "/step", content=b"{not json", headers={"content-type": "application/json"}
            ).status_code
            == 422
        )

        big = {"action": {"text": "x" * (70 * 1024)}}
        oversized = http.post("/step", json=big)
        assert oversized.status_code == 413 and "65536" in oversized.json()["detail"]

        def chunks():
            yield json.dumps(big).encode()

        streamed = http.post(
            "/step", content=chunks(), headers={"content-type": "application/json"}
        )
        assert streamed.status_code == 413

        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"cmd": "ls"})
        with pytest.raises(RuntimeError, match="PAYLOAD_TOO_LARGE"):
            env.step({"text": "y" * (70 * 1024)})
        assert env.step({"text": "cat f"}).observation["text"] == f"hi\n{PROMPT}"
        assert http.get("/health").json() == {"status": "healthy"}
    http.close()


def test_http_sessions_and_stateless_requests(server: ServerThread) -> None:
    with httpx.Client(base_url=url(server)) as http:
        reset = http.post("/reset", json={}).json()
        assert (reset["observation"]["text"], reset["reward"], reset["done"]) == (
            PROMPT,
            None,
            False,
        )
        assert reset["metadata"]["truncated"] is False
        one_shot = http.post("/step", json={"action": {"text": "echo one"}}).json()
        assert one_shot["observation"]["text"] == f"one\n{PROMPT}" and one_shot["reward"] == 0.0
        assert http.get("/state").json()["step_count"] == 0

        session_id = http.post("/sessions", json={}).json()["session_id"]
        early = http.post("/step", json={"session_id": session_id, "action": {"text": "ls"}})
        assert early.status_code == 409 and "reset" in early.json()["detail"]
        reset = http.post("/reset", json={"session_id": session_id, "episode_id": "ep-1"})
        assert reset.json()["observation"]["text"] == PROMPT
        step = {"session_id": session_id, "action": {"text": "touch x && ls"}}
        assert http.post("/step", json=step).json()["observation"]["text"] == f"x\n{PROMPT}"
        state = http.get("/state", params={"session_id": session_id}).json()
        assert state["episode_id"] == "ep-1" and state["step_count"] == 1
        assert http.delete(f"/sessions/{session_id}").json()["closed"] is True
        assert http.post("/step", json=step).status_code == 404
        assert http.get("/sessions").json()["active"] == 0
        schema = http.get("/schema").json()
        assert schema["action"]["required"] == ["text"]
        assert schema["reset_observation"] == schema["observation"]
        assert http.get("/metadata").json()["name"] == "terminal"


def test_build_app_needs_exactly_one_source() -> None:
    from agentworld.sim.openenv import build_app

    with pytest.raises(ValueError, match="exactly one"):
        build_app("terminal")
    with pytest.raises(ValueError, match="exactly one"):
        build_app("terminal", checkpoint="/nowhere", real=True)
    app = build_app("terminal", real=True, max_sessions=3)
    assert app.state.sessions.max_sessions == 3
