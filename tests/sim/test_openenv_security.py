"""Attacks on `agentworld serve` (issue 22: items 4 and 10, the session lockout; issue 23: the
shutdown hook; issue 43 item 2: a token by default), tried on real servers over the real
sandboxed terminal: `agentworld serve --real` makes a token and prints it once, a
client-defined check (the ``^(a+)+$`` regex) is refused and never runs, other clients stay
fast, SIGTERM stops the server and closes every sandbox, HTTP sessions cannot take the
WebSocket half of the slots, and the API key guards HTTP and WebSocket alike."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import tempfile
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("openenv")
from agentworld.core.plugins import get_domain
from agentworld.sim.openenv import RealEnvFactory, TaskPool, create_app
from agentworld.sim.server.thread import ServerThread
from loopback import serve_cli
from openenv.core.generic_client import GenericEnvClient
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

try:
    from agentworld.domains.terminal.sandbox import Limits, detect_sandbox

    detect_sandbox()
except (ImportError, RuntimeError) as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"no terminal sandbox: {exc}", allow_module_level=True)

PROMPT = "user@sandbox:~$ "
EVIL_TASK = {
    "id": "evil",
    "domain": "terminal",
    "instruction": "x",
    "check": {"output_regex": "^(a+)+$"},
}


def factory() -> RealEnvFactory:
    return RealEnvFactory(get_domain("terminal"), limits=Limits(command_timeout_s=2.0))


def test_client_tasks_are_refused_and_sigterm_closes_every_sandbox(tmp_path: Path) -> None:
    # a directory the sandbox can traverse (pytest's tmp_path parents are private)
    roots = Path(tempfile.mkdtemp(prefix="agentworld-test-roots-"))
    roots.chmod(0o755)
    env = {**os.environ, "AGENTWORLD_TERMINAL_ROOT": str(roots)}
    env.pop("AGENTWORLD_API_KEY", None)
    args = ["--domain", "terminal", "--real", "--max-sessions", "4"]
    with serve_cli(args, tmp_path / "server.log", env) as (url, process):
        # no key given: the server made a token and printed it once, as Jupyter does
        log = (tmp_path / "server.log").read_text()
        tokens = re.findall(r"made for this run; every route but /health needs it\): (\S+)", log)
        assert len(tokens) == 1 and len(tokens[0]) == 43 and log.count(tokens[0]) == 3, log
        auth = {"Authorization": f"Bearer {tokens[0]}"}
        assert httpx.post(f"{url}/reset", json={}).status_code == 401  # even on loopback
        # a page of another site: its WebSocket (even with the token) and its text/plain
        # POST (a simple request, sent without preflight) are refused
        with pytest.raises(InvalidStatus, match="403"):
            connect(url.replace("http", "ws", 1) + f"/ws?token={tokens[0]}", open_timeout=30,
                    additional_headers={"Origin": "http://evil.example"})  # fmt: skip
        rpc = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
        plain = {**auth, "content-type": "text/plain", "origin": url}
        assert httpx.post(f"{url}/mcp", content=rpc, headers=plain).status_code == 415
        with connect(url.replace("http", "ws", 1) + f"/ws?token={tokens[0]}", open_timeout=30):
            pass
        log = (tmp_path / "server.log").read_text()
        assert log.count(tokens[0]) == 3 and "/ws?token=***" in log  # not in the access log
        with pytest.raises(Exception, match="403"):
            with GenericEnvClient(base_url=url).sync() as stranger:
                stranger.reset()
        with GenericEnvClient(base_url=url, headers=auth).sync() as victim, \
                httpx.Client(base_url=url, headers=auth) as http:  # fmt: skip
            # the attack: a task whose check is a catastrophic regex, by HTTP and WebSocket
            refused = http.post("/reset", json={"task": EVIL_TASK})
            assert refused.status_code == 422 and "cannot define a task" in refused.text
            with GenericEnvClient(base_url=url, headers=auth).sync() as attacker:
                with pytest.raises(RuntimeError, match="cannot define a task"):
                    attacker.reset(task=EVIL_TASK)
                attacker.reset(seed=5)
                attacker.step({"text": "printf 'a%.0s' $(seq 40); echo b"})
            # the server picks tasks: the same seed gives the same task, with its instruction
            first = victim.reset(seed=7)
            assert first.observation["text"] == PROMPT
            assert first.metadata["task_id"].startswith("terminal-7-")
            assert first.metadata["instruction"]
            assert victim.reset(seed=7).metadata["task_id"] == first.metadata["task_id"]
            started = time.monotonic()
            assert victim.step({"text": "echo fast"}).observation["text"] == f"fast\n{PROMPT}"
            assert http.get("/health").status_code == 200
            assert time.monotonic() - started < 2.0
            session_id = http.post("/sessions", json={}).json()["session_id"]
            http.post("/reset", json={"session_id": session_id, "seed": 1})
            # the WebSocket's and the HTTP session's episode roots (in a per-process directory)
            assert len(list(roots.rglob("agentworld-ep-*"))) == 2
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)  # a client is still connected
            process.wait(timeout=30)
            stop_s = time.monotonic() - started
    assert stop_s < 15.0, (tmp_path / "server.log").read_text()
    left = list(roots.rglob("agentworld-ep-*"))
    shutil.rmtree(roots, ignore_errors=True)
    assert left == []  # every episode root was closed and removed


def test_http_sessions_cannot_lock_the_websocket_clients_out() -> None:
    app = create_app(factory(), name="terminal", max_sessions=4)  # HTTP: 2 in all
    with ServerThread(app) as server:
        url = f"http://127.0.0.1:{server.port}"

        def client(address: str) -> httpx.Client:
            transport = httpx.HTTPTransport(local_address=address)
            return httpx.Client(base_url=url, transport=transport)

        with client("127.0.0.1") as a, client("127.0.0.2") as b, client("127.0.0.3") as c:
            assert a.post("/sessions", json={}).status_code == 200
            assert b.post("/sessions", json={}).status_code == 200
            full = c.post("/sessions", json={})
            assert full.status_code == 429 and "WebSocket" in full.json()["detail"]
            counts = a.get("/sessions").json()
            assert (counts["http"], counts["active"]) == (2, 2)

            async def two_websocket_clients() -> None:  # the other half stays free for /ws
                async with GenericEnvClient(base_url=url) as d, GenericEnvClient(base_url=url) as e:
                    await asyncio.gather(d.reset(), e.reset())
                    got = await d.step({"text": "echo in"})
                    assert got.observation["text"] == f"in\n{PROMPT}"

            asyncio.run(two_websocket_clients())


def test_stopping_the_server_closes_every_session() -> None:
    app = create_app(factory(), name="terminal", max_sessions=4)
    server = ServerThread(app).start()
    url = f"http://127.0.0.1:{server.port}"
    session_id = httpx.post(f"{url}/sessions", json={}).json()["session_id"]
    httpx.post(f"{url}/reset", json={"session_id": session_id})
    env = app.state.sessions.get(session_id).env.env.env  # ServedEnv > CheckedEnvironment > env
    root = Path(env.root)
    assert root.is_dir()
    server.stop()
    assert app.state.sessions.num_sessions == 0
    assert not root.exists()


def test_api_key_guards_http_and_websocket() -> None:
    pool = TaskPool(get_domain("terminal").tasks(), num_listed=2)
    app = create_app(factory(), name="terminal", max_sessions=2, api_key="s3cret", tasks=pool)
    with ServerThread(app) as server:
        url = f"http://127.0.0.1:{server.port}"
        assert httpx.get(f"{url}/health").status_code == 200  # open for probes
        for method, path in (("POST", "/reset"), ("GET", "/schema"), ("POST", "/mcp")):
            refused = httpx.request(method, f"{url}{path}", json={} if method == "POST" else None)
            assert refused.status_code == 401, path
            assert refused.headers["www-authenticate"] == "Bearer"
        wrong = httpx.get(f"{url}/schema", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        with pytest.raises(Exception, match="403"):
            with GenericEnvClient(base_url=url).sync() as env:
                env.reset()
        headers = {"Authorization": "Bearer s3cret"}
        listed = httpx.get(f"{url}/tasks", headers=headers).json()["tasks"]
        assert [t["id"] for t in listed] == [t.id for t in pool.listed.values()]
        assert "check" not in listed[0]  # the checks stay on the server
        with GenericEnvClient(base_url=url, headers=headers).sync() as env:
            result = env.reset(task_id=listed[1]["id"])
            assert result.metadata["instruction"] == listed[1]["instruction"]
            with pytest.raises(RuntimeError, match="unknown task_id"):
                env.reset(task_id="terminal-9-0000-create")
