"""Web pages cannot drive `agentworld serve` (issue 43 item 2), on real servers on loopback:
a WebSocket handshake or POST from another site's page (its ``Origin``) is refused with 403
even with the token, a DNS-rebinding ``Host`` too; POST bodies must be ``application/json``
(a ``text/plain`` form post, the simple request a browser sends without preflight, gets
415); the token is required (header, or ``?token=`` on ``/ws``), a wrong one refused."""

from __future__ import annotations

import json

import httpx
import pytest

pytest.importorskip("openenv")
from agentworld.core.plugins import get_domain
from agentworld.sim.openenv import RealEnvFactory, create_app
from agentworld.sim.server.thread import ServerThread
from openenv.core.generic_client import GenericEnvClient
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

TOKEN = "br0wser-t0ken"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NOTEBOOK = "http://notebook.example:8888"


@pytest.fixture(scope="module")
def url():  # noqa: ANN201
    factory = RealEnvFactory(get_domain("frozenlake-4x4"))
    app = create_app(
        factory, name="frozenlake", max_sessions=4, api_key=TOKEN, allowed_origins=[NOTEBOOK]
    )
    with ServerThread(app) as thread:
        yield f"http://127.0.0.1:{thread.port}"


def ws_status(url: str, path: str = "/ws", **headers: str) -> int | str:
    """The HTTP status refusing the handshake, or the first observation's text."""
    try:
        with connect(url.replace("http", "ws", 1) + path, additional_headers=headers,
                     open_timeout=10) as ws:  # fmt: skip
            ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            return json.loads(ws.recv(timeout=10))["data"]["observation"]["text"]
    except InvalidStatus as refused:
        return refused.response.status_code


def test_a_cross_origin_websocket_is_refused(url: str) -> None:
    port = url.rsplit(":", 1)[1]
    for origin in ("http://evil.example", "https://evil.example:443", "null",
                   f"http://evil.example:{port}", "http://127.0.0.1:1"):  # fmt: skip
        assert ws_status(url, Origin=origin, **AUTH) == 403, origin
        assert ws_status(url, f"/ws?token={TOKEN}", Origin=origin) == 403, origin
    for origin in (url, f"http://localhost:{port}", NOTEBOOK):  # its own, and the allowed one
        assert str(ws_status(url, Origin=origin, **AUTH)).startswith("agent: row 0"), origin
    assert str(ws_status(url, **AUTH)).startswith("agent: row 0")  # no Origin: no browser


def test_the_token_is_required_and_checked(url: str) -> None:
    assert httpx.get(f"{url}/health").status_code == 200  # open for probes
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": TOKEN}):
        assert httpx.get(f"{url}/schema", headers=headers).status_code == 401, headers
        refused = httpx.post(f"{url}/reset", json={}, headers=headers)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert ws_status(url) == 403
    assert ws_status(url, "/ws?token=nope") == 403
    assert ws_status(url, Authorization="Bearer nope") == 403
    assert httpx.get(f"{url}/schema", headers=AUTH).status_code == 200
    assert str(ws_status(url, f"/ws?token={TOKEN}")).startswith("agent: row 0")
    with GenericEnvClient(base_url=url, headers=AUTH).sync() as env:  # OpenEnv's own client
        assert env.reset(seed=0).observation["text"].startswith("agent: row 0, col 0")


def test_posts_must_be_json(url: str) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    for path in ("/mcp", "/sessions", "/reset", "/step"):
        for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
            sent = httpx.post(f"{url}{path}", content=body, headers={**AUTH, "content-type": kind})
            assert sent.status_code == 415, (path, kind)
            assert "application/json" in sent.json()["detail"]
        bare = httpx.post(f"{url}{path}", headers=AUTH)  # no body, no Content-Type
        assert bare.status_code == 415, path
    json_utf8 = {**AUTH, "content-type": "application/json; charset=utf-8"}
    listed = httpx.post(f"{url}/mcp", content=body, headers=json_utf8)
    assert [t["name"] for t in listed.json()["result"]["tools"]] == ["reset", "step", "state"]
    made = httpx.post(f"{url}/sessions", json={}, headers=AUTH)
    assert made.status_code == 200
    httpx.delete(f"{url}/sessions/{made.json()['session_id']}", headers=AUTH)


def test_a_cross_origin_post_and_a_rebound_host_are_refused(url: str) -> None:
    for path in ("/mcp", "/sessions", "/reset"):
        evil = {**AUTH, "Origin": "http://evil.example"}
        sent = httpx.post(f"{url}{path}", json={}, headers=evil)
        assert sent.status_code == 403 and "evil.example" in sent.json()["detail"], path
    port = url.rsplit(":", 1)[1]
    rebound = httpx.get(f"{url}/tasks", headers={**AUTH, "Host": f"evil.example:{port}"})
    assert rebound.status_code == 403 and "DNS rebinding" in rebound.json()["detail"]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "notebook.example:8888"):
        assert httpx.get(f"{url}/tasks", headers={**AUTH, "Host": host}).status_code == 200


def test_a_bad_allowed_origin_is_refused_when_the_app_is_built() -> None:
    factory = RealEnvFactory(get_domain("frozenlake-4x4"))
    with pytest.raises(ValueError, match="an origin is http"):
        create_app(factory, name="frozenlake", allowed_origins=["notebook.example/lab"])
