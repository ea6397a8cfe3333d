"""No pty or process of the interactive terminal survives its collector killed with SIGKILL, nor
a real server shut down with SIGTERM (issue 33, "Bad input and reliability")."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import httpx
import pytest
from agentworld.domains.tty.keys import render_action
from loopback import serve_cli
from sandboxes import needs_sandbox
from test_tty_env import marked

pytestmark = needs_sandbox

COLLECTOR = textwrap.dedent(
    """
    import os, sys
    from agentworld.core import plugins
    from agentworld.core.collect import run_episode
    from agentworld.core.types import Action
    from agentworld.domains.tty.keys import render_action

    class Starter:
        name = "starter"
        def reset(self, seed):
            self.sent = False
        def act(self, task, history):
            if self.sent:
                print("started", flush=True)
                sys.stdin.readline()  # hold the episode open until killed
                return None
            self.sent = True
            marker = os.environ["AW_MARKER"]
            return Action(text=render_action([
                (f"(trap '' INT HUP TERM; exec -a {marker} sleep 999) &\\n", 0.2),
                (f"nohup bash -c 'exec -a {marker} sleep 998' > /dev/null 2>&1 &\\n", 0.2),
                ("top\\n", 0.3)]))

    domain = plugins.get_domain("tty")
    task = domain.tasks().sample(1, seed=0)[0]
    env = domain.make_env()
    run_episode(domain, env, task, Starter(), seed=0, max_steps=3)
    """
)


def descendants(pid: int) -> set[int]:
    """Host pids of every descendant of ``pid`` now."""
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        try:
            for tid in os.listdir(f"/proc/{parent}/task"):
                with open(f"/proc/{parent}/task/{tid}/children") as fh:
                    kids = [int(p) for p in fh.read().split()]
                found.update(kids)
                todo += kids
        except OSError:
            continue
    return found


def alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rpartition(")")[2].split()[0] not in ("Z", "X"):
                    out.add(pid)
        except (OSError, IndexError):
            continue
    return out


def wait_gone(check, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while check() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not check()


def test_sigkill_of_the_collector_kills_every_process_of_its_sandbox():
    marker = f"aw-tty-kill-{uuid.uuid4().hex[:8]}"
    collector = subprocess.Popen([sys.executable, "-c", COLLECTOR], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True,
                                 env={**os.environ, "AW_MARKER": marker})  # fmt: skip
    try:
        assert collector.stdout.readline().strip() == "started"
        sandbox = descendants(collector.pid)
        assert len(marked(marker)) == 2 and len(sandbox) >= 5  # bwrap/unshare, init, bash, 2 sleeps, top
    finally:
        collector.kill()  # SIGKILL: no handler of ours runs
        collector.wait(timeout=30)
    assert wait_gone(lambda: marked(marker)), "a process of the sandbox outlived its collector"
    assert wait_gone(lambda: alive(sandbox)), f"left: {alive(sandbox)}"


def test_sigterm_of_a_real_server_kills_its_sandboxes(tmp_path: Path) -> None:
    pytest.importorskip("openenv")
    marker = f"aw-tty-term-{uuid.uuid4().hex[:8]}"
    parent = Path(tempfile.mkdtemp(prefix="aw-tty-serve-"))
    parent.chmod(0o755)
    env = {**os.environ, "AGENTWORLD_TERMINAL_ROOT": str(parent)}
    try:
        with serve_cli(["--domain", "tty", "--real", "--no-auth"], tmp_path / "server.log",
                       env) as (url, process):  # fmt: skip
            with httpx.Client(base_url=url, timeout=60) as http:
                session = http.post("/sessions", json={}).json()["session_id"]
                reset = http.post("/reset", json={"session_id": session})
                assert reset.json()["observation"]["text"] == "user@sandbox:~$"
                action = render_action([(f"exec -a {marker} sleep 999\n", 0.3)])
                step = http.post("/step", json={"session_id": session, "action": {"text": action}})
                assert step.json()["observation"]["text"].endswith("sleep 999"), step.text
            assert len(marked(marker)) == 1
        assert process.returncode == 128 + signal.SIGTERM  # exit handlers ran
        assert wait_gone(lambda: marked(marker))
        assert list(parent.iterdir()) == []
    finally:
        shutil.rmtree(parent, ignore_errors=True)
