"""A SIGTERM of ``agentworld serve --real`` closes every shell and leaves no session directory
behind (issue 30: uvicorn re-raised the signal after its shutdown, so exit handlers never
ran and an empty ``agentworld-run-*`` directory stayed in the temporary directory)."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

import httpx
import pytest
from loopback import serve_cli
from sandboxes import needs_sandbox


@needs_sandbox
def test_sigterm_of_a_real_server_leaves_no_session_directory(tmp_path: Path) -> None:
    pytest.importorskip("openenv")
    parent = Path(tempfile.mkdtemp(prefix="aw-serve-root-"))
    parent.chmod(0o755)  # the sandbox uid passes through it to its episode root
    env = {**os.environ, "AGENTWORLD_TERMINAL_ROOT": str(parent)}
    try:
        args = ["--domain", "terminal", "--real", "--no-token"]
        with serve_cli(args, tmp_path / "server.log", env) as (url, process):
            reset = httpx.post(f"{url}/reset", json={}, timeout=60)
            assert reset.status_code == 200 and reset.json()["observation"]["text"].endswith("$ ")
            assert [p.name[:15] for p in parent.iterdir()] == ["agentworld-run-"]
        assert process.returncode == 128 + signal.SIGTERM  # exit handlers ran
        assert list(parent.iterdir()) == []
    finally:
        shutil.rmtree(parent, ignore_errors=True)
