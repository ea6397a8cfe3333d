"""The web apps' server answers only the live episode's browser (issue 43, item 3): another
local client on the loopback port can neither read nor change the episode's world."""

from __future__ import annotations

import os

import httpx
import pytest
from agentworld.domains.web.env import WebEnv, parse_observation
from agentworld.domains.web.tasks import is_done, make_task

pytestmark = pytest.mark.skipif(
    not any(os.path.exists(p) for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser")),
    reason="needs Debian's chromium (apt-get install chromium; .ci/run installs it)")


def test_another_local_client_cannot_complete_a_live_episode():
    env = WebEnv(timeout_s=3)
    client = httpx.Client(trust_env=False, headers={"Host": "todo.test"})
    try:
        task = make_task("todo_complete", 7)
        env.reset(options={"task": task})
        base = f"http://127.0.0.1:{env.server.port}"
        done = client.post(f"{base}/item/{task.check['item_id']}", data={"op": "complete"})
        assert done.status_code == 403 and not is_done(env.server.world, task.check)
        assert client.get(f"{base}/").status_code == 403
        # The episode's own browser sends the key with every request.
        fields, tree = parse_observation(env.step("goto('http://todo.test/')")[0])
        assert fields["URL"] == "http://todo.test/" and task.check["item"] in tree
        key = env.server.headers()
        assert client.get(f"{base}/", headers=key).status_code == 200
        env.reset(options={"task": task})  # a new episode, a new key
        assert client.get(f"{base}/", headers=key).status_code == 403
        assert client.get(f"{base}/", headers=env.server.headers()).status_code == 200
    finally:
        client.close()
        env.close()
