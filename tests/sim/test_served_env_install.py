"""Serving a real environment without the training stack (issue 35, item 6).

The OpenEnv example installs ``agentworld-sim[openenv]`` and ``agentworld-domain-terminal``
(``examples/openenv-terminal/server/Dockerfile``). Built as wheels and installed offline from
uv's cache into a fresh virtual environment (the lock's closure of the two), that pulls neither
torch nor transformers (they are ``agentworld-sim[hf]``), the ``hf`` backend names its extra,
and the example's server answers a real episode on loopback."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sandboxes import needs_sandbox

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "openenv-terminal"
UV = os.environ.get("UV") or shutil.which("uv")
TRAINING_STACK = ("torch", "transformers", "accelerate", "peft", "vllm")

pytestmark = pytest.mark.skipif(UV is None, reason="needs the uv executable")


def run(*args: str, env_extra: dict[str, str] | None = None,
        **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "UV_OFFLINE": "1", **(env_extra or {})}  # all from uv's cache
    env.pop("VIRTUAL_ENV", None)
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env, **kwargs)
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@needs_sandbox
def test_served_terminal_installs_without_torch_and_answers(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    # The lock's closure of the two packages, the members built as wheels (--no-editable).
    # `uv pip install` would resolve afresh, which offline needs index pages that a fresh
    # `uv sync --locked` (CI) never caches; the lock's own files are in the cache.
    run(UV, "sync", "-q", "--locked", "--offline", "--no-editable", "--no-dev", "--python",
        sys.executable, "--package", "agentworld-sim", "--extra", "openenv", "--package",
        "agentworld-domain-terminal", cwd=ROOT, env_extra={"UV_PROJECT_ENVIRONMENT": str(venv)})
    found = run(str(python), "-c", "import importlib.util as u; print(' '.join(m for m in "
                f"{TRAINING_STACK!r} if u.find_spec(m)))").stdout.split()
    assert found == [], "serving a real environment must not install the training stack"
    hf = subprocess.run(
        [str(python), "-c", "from agentworld.core import plugins; plugins.get_sim_backend('hf')"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert "pip install 'agentworld-sim[hf]'" in hf.stderr.strip().splitlines()[-1]

    port = free_port()
    env = {**os.environ, "HOST": "127.0.0.1", "PORT": str(port), "PYTHONPATH": str(EXAMPLE)}
    env.pop("AGENTWORLD_API_KEY", None)
    server = subprocess.Popen([str(python), "-m", "server.app"], cwd=EXAMPLE, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120  # openenv imports gradio: slow on a loaded machine
        while True:
            assert server.poll() is None, server.stderr.read()
            try:
                if httpx.get(f"{base}/health", timeout=2).json() == {"status": "healthy"}:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the served terminal did not come up"
            time.sleep(0.5)
        with httpx.Client(base_url=base, timeout=30) as client:
            reset = client.post("/reset", json={"seed": 0}).json()
            assert reset["observation"]["text"] == "user@sandbox:~$ "
            assert reset["metadata"]["task_id"].startswith("terminal-0-")
            step = client.post("/step", json={"action": {"text": "echo served && pwd"}}).json()
            assert step["observation"]["text"] == "served\n/home/agent\nuser@sandbox:~$ "
            assert step["metadata"]["exit_code"] == 0 and step["done"] is False
    finally:
        server.terminate()
        server.wait(timeout=30)
