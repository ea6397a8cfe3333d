"""A SIGTERM of ``agentworld serve --real`` closes every shell and leaves no session directory
behind (issue 30: uvicorn re-raised the signal after its shutdown, so exit handlers never
ran and an empty ``agentworld-run-*`` directory stayed in the temporary directory)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest
from sandboxes import needs_sandbox


@needs_sandbox
def test_sigterm_of_a_real_server_leaves_no_session_directory() -> None:
    pytest.importorskip("openenv")
    parent = Path(tempfile.mkdtemp(prefix="aw-serve-root-"))
    parent.chmod(0o755)  # the sandbox uid passes through it to its episode root
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-c", "from agentworld.app.cli import main; main()", "serve"]
    command += ["--domain", "terminal", "--real", "--port", str(port)]
    env = {**os.environ, "AGENTWORLD_TERMINAL_ROOT": str(parent)}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, "the server exited"
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start in 120 s"
            time.sleep(0.2)
        reset = httpx.post(f"{url}/reset", json={}, timeout=60)
        assert reset.status_code == 200 and reset.json()["observation"]["text"].endswith("$ ")
        assert [p.name[:15] for p in parent.iterdir()] == ["agentworld-run-"]
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
    try:
        assert code == 128 + signal.SIGTERM
        assert list(parent.iterdir()) == []
    finally:
        shutil.rmtree(parent, ignore_errors=True)
