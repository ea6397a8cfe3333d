"""`agentworld serve` against OpenEnv's own tools: `openenv validate --url` on a live server,
OpenEnv's MCPToolClient and raw JSON-RPC over the domain's actions (/mcp and /ws), TRL's
OpenEnv harness importing beside our `openenv` install, and the official `mcp` SDK's
Streamable HTTP client keeping one env per MCP session (issue 46 item 5)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("openenv")
from agentworld.core.plugins import get_domain
from agentworld.sim.openenv import RealEnvFactory, TaskPool, create_app
from agentworld.sim.server.thread import ServerThread
from openenv.core.mcp_client import MCPToolClient

try:
    from agentworld.domains.terminal.sandbox import Limits, detect_sandbox

    detect_sandbox()
except (ImportError, RuntimeError) as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"no terminal sandbox: {exc}", allow_module_level=True)

PROMPT = "user@sandbox:~$ "
JSON = "application/json"
EXAMPLE = Path(__file__).parents[2] / "examples" / "openenv-terminal"


@pytest.fixture(scope="module")
def server():
    factory = RealEnvFactory(get_domain("terminal"), limits=Limits(command_timeout_s=2.0))
    tasks = TaskPool(get_domain("terminal").tasks())
    app = create_app(factory, name="terminal", max_sessions=4, tasks=tasks)
    with ServerThread(app) as thread:
        yield f"http://{thread.host}:{thread.port}"


def test_openenv_validate_url_passes(server: str) -> None:
    from openenv.cli.__main__ import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["validate", "--url", server, "--json"])
    report = json.loads(result.output)
    failed = [c["id"] for c in report["criteria"] if not c["passed"]]
    assert result.exit_code == 0 and report["passed"] is True, failed
    assert report["summary"]["required_passed_count"] == 6 and report["mode"] == "simulation"


def test_mcp_tools_over_http_and_websocket(server: str) -> None:
    def rpc(method: str, params: dict | None = None) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        return httpx.post(f"{server}/mcp", json=body).json()

    tools = rpc("tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == ["reset", "step", "state"]
    assert tools[1]["inputSchema"]["required"] == ["text"]
    assert rpc("nope")["error"]["code"] == -32601
    broken = httpx.post(f"{server}/mcp", content=b"{oops", headers={"content-type": JSON})
    assert broken.json()["error"]["code"] == -32700
    assert "jsonrpc" in httpx.post(f"{server}/mcp", json={}).json()  # what validate sends

    session = rpc("openenv/session/create")["result"]["session_id"]
    reset = rpc("tools/call", {"name": "reset", "arguments": {"seed": 3, "session_id": session}})
    assert "result" in reset, reset
    assert reset["result"]["structuredContent"]["metadata"]["task_id"].startswith("terminal-3-")
    step = rpc("tools/call", {"name": "step", "arguments": {"text": "echo hi > f && cat f"}})
    assert step["result"]["content"][0]["text"] == f"hi\n{PROMPT}"  # a one-shot env
    step = rpc("tools/call", {"name": "step", "arguments": {"text": "ls f", "session_id": session}})
    assert step["result"]["content"][0]["text"].startswith("ls: cannot access 'f'")
    bad = rpc("tools/call", {"name": "step", "arguments": {"cmd": "ls"}})
    assert bad["error"]["code"] == -32602 and "text" in bad["error"]["message"]
    state = rpc("tools/call", {"name": "state", "arguments": {"session_id": session}})
    assert state["result"]["structuredContent"]["step_count"] == 1
    assert rpc("openenv/session/close", {"session_id": session})["result"]["closed"] is True

    from websockets.sync.client import connect

    with connect(server.replace("http", "ws", 1) + "/ws") as ws:  # MCP on the /ws session

        def send(message: dict) -> dict:
            ws.send(json.dumps(message))
            return json.loads(ws.recv())

        send({"type": "reset", "data": {"seed": 4}})
        send({"type": "step", "data": {"text": "mkdir d"}})
        call = {"name": "step", "arguments": {"text": "ls"}}
        request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call}
        reply = send({"type": "mcp", "data": request})
        assert reply["type"] == "mcp" and reply["data"]["id"] == 7
        listing = reply["data"]["result"]["content"][0]["text"]  # the task's files and d
        assert "d" in listing.split() and listing.endswith(PROMPT)
        state = send({"type": "state"})["data"]
        assert state["step_count"] == 2


def test_openenv_mcp_tool_client(server: str) -> None:
    async def run() -> None:
        async with MCPToolClient(base_url=server) as env:
            names = [tool.name for tool in await env.list_tools()]
            assert names == ["reset", "step", "state"]
            await env.call_tool("reset", seed=11)
            made = await env.call_tool("step", text="touch x && ls x")
            assert made["observation"]["text"] == f"x\n{PROMPT}" and made["reward"] == 0.0
            state = await env.call_tool("state")
            assert state["step_count"] == 1

    asyncio.run(run())
    assert httpx.get(f"{server}/sessions").json()["active"] == 0  # closed with the client


def test_trl_openenv_harness_imports() -> None:
    pytest.importorskip("trl")
    from trl.experimental.async_grpo import openenv_harness

    assert openenv_harness.HarnessRolloutWorker is not None


def load(path: Path, name: str):  # noqa: ANN201
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_openenv_package_validates_and_serves() -> None:
    """examples/openenv-terminal: OpenEnv's static validation passes, its server/app.py app
    serves an episode to its client class, and AutoEnv connects to it."""
    from openenv.auto import AutoEnv
    from openenv.cli.__main__ import app as openenv_cli
    from typer.testing import CliRunner

    result = CliRunner().invoke(openenv_cli, ["validate", str(EXAMPLE), "--level", "static"])
    assert result.exit_code == 0 and "Verdict: PASS" in result.output, result.output
    served = load(EXAMPLE / "server" / "app.py", "agentworld_terminal_server")
    client = load(EXAMPLE / "client.py", "agentworld_terminal_client")
    with ServerThread(served.app) as thread:
        url = f"http://{thread.host}:{thread.port}"
        with client.AgentworldTerminalEnv(base_url=url).sync() as env:
            first = env.reset(seed=2)
            assert first.metadata["task_id"].startswith("terminal-2-")
            assert env.step({"text": "echo ok"}).observation["text"] == f"ok\n{PROMPT}"
        with AutoEnv.from_env("agentworld_terminal", base_url=url, skip_install=True).sync() as env:
            assert env.reset(seed=2).metadata["task_id"] == first.metadata["task_id"]


def test_the_official_mcp_client_connects_to_mcp(server: str) -> None:
    """The SDK's own Streamable HTTP client: initialize, list the tools, call them."""
    from mcp import ClientSession

    try:
        from mcp.client.streamable_http import streamable_http_client as connect
    except ImportError:  # the SDK's older name
        from mcp.client.streamable_http import streamablehttp_client as connect

    async def run() -> tuple[object, list[str], str, dict]:
        async with connect(f"{server}/mcp") as (read, write, *_):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                await session.send_ping()
                tools = await session.list_tools()
                reset = await session.call_tool("reset", {"seed": 0})
                step = await session.call_tool("step", {"text": "echo hi"})
                return init, [t.name for t in tools.tools], reset.content[0].text, \
                    step.structuredContent

    init, names, first, stepped = asyncio.run(run())
    assert init.serverInfo.name == "terminal" and init.capabilities.tools is not None
    assert init.protocolVersion in ("2025-06-18", "2025-11-25")
    assert names == ["reset", "step", "state"]
    assert first.endswith(PROMPT)
    assert stepped["observation"]["text"] == "hi\n" + PROMPT
    notification = httpx.post(f"{server}/mcp", json={"jsonrpc": "2.0",
                                                     "method": "notifications/initialized"})
    assert notification.status_code == 202 and notification.content == b""


def sdk_connect():  # noqa: ANN201
    try:
        from mcp.client.streamable_http import streamable_http_client as connect
    except ImportError:  # the SDK's older name
        from mcp.client.streamable_http import streamablehttp_client as connect
    return connect


def test_an_mcp_session_keeps_its_env_across_calls() -> None:
    """``cd /tmp; X=5`` then ``pwd; echo $X`` in two ``tools/call`` of one MCP session: the
    second sees /tmp and 5 (the SDK sends the ``Mcp-Session-Id`` of ``initialize``); the
    session is closed by the SDK's DELETE at exit, an unknown id gets 404, and an idle one is
    swept. On a server that wants a token, which the SDK sends through its httpx client."""
    from mcp import ClientSession

    token = "mcp-t0ken"
    factory = RealEnvFactory(get_domain("terminal"), limits=Limits(command_timeout_s=2.0))
    app = create_app(factory, name="terminal", max_sessions=4, api_key=token, idle_timeout_s=1.0)
    auth = {"Authorization": f"Bearer {token}"}
    with ServerThread(app) as thread:
        url = f"http://{thread.host}:{thread.port}"

        async def run() -> tuple[str, str, int]:
            async with httpx.AsyncClient(headers=auth, timeout=60) as http:
                async with sdk_connect()(f"{url}/mcp", http_client=http) as (read, write, *_):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        await session.call_tool("reset", {"seed": 0})
                        await session.call_tool("step", {"text": "cd /tmp; X=5"})
                        second = await session.call_tool("step", {"text": "pwd; echo $X"})
                        state = await session.call_tool("state", {})
                        during = httpx.get(f"{url}/sessions", headers=auth).json()["http"]
                        return second.content[0].text, state.structuredContent, during

        text, state, during = asyncio.run(run())
        assert text == "/tmp\n5\nuser@sandbox:/tmp$ "
        assert state["step_count"] == 2 and during == 1
        assert httpx.get(f"{url}/sessions", headers=auth).json()["active"] == 0  # DELETE

        def post(body: dict, **headers: str) -> httpx.Response:
            return httpx.post(f"{url}/mcp", json=body, headers={**auth, **headers}, timeout=60)

        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18"}}  # fmt: skip
        opened = post(init)
        session_id = opened.headers["mcp-session-id"]
        assert len(session_id) == 32 and opened.json()["result"]["protocolVersion"] == "2025-06-18"
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "reset", "arguments": {}}}  # fmt: skip
        assert "result" in post(call, **{"Mcp-Session-Id": session_id}).json()
        gone = post(call, **{"Mcp-Session-Id": "0" * 32})
        assert gone.status_code == 404 and "initialize" in gone.json()["error"]["message"]
        deadline = time.monotonic() + 5.0  # idle past 1 s: the sweeper closes it
        while httpx.get(f"{url}/sessions", headers=auth).json()["http"] and \
                time.monotonic() < deadline:  # fmt: skip
            time.sleep(0.1)
        assert post(call, **{"Mcp-Session-Id": session_id}).status_code == 404
        ended = httpx.delete(f"{url}/mcp", headers={**auth, "Mcp-Session-Id": session_id})
        assert ended.status_code == 404
