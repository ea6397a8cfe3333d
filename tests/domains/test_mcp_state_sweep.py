"""mcp state directories of a SIGKILLed driver are swept (issue 43, low item).

Before: each episode's state directory was ``agentworld-mcp-<random>``; a driver killed with
SIGKILL left it (and the server's data in it) under the temporary directory for good. Now its
name records the owning process (pid and start time) and the next process's first episode
removes those whose owner is gone, keeping those of live processes. Real drivers, real SIGKILL,
the real ``notes`` server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentworld.core.owned_dirs import owned_prefix
from agentworld.domains.mcp.env import STATE_PREFIX

DRIVER = (
    "from agentworld.domains.mcp.env import McpEnv; import time\n"
    "e = McpEnv(server='notes'); e.reset()\n"
    "e.step('{\"name\": \"create_note\", \"arguments\": {\"title\": \"a\", \"body\": \"b\"}}')\n"
    "print(e.server_pid(), e.root, flush=True)\n"
    "time.sleep(120)\n"
)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_the_next_process_sweeps_a_killed_drivers_state_directory():
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, text=True)
    live = tempfile.mkdtemp(prefix=owned_prefix(STATE_PREFIX))  # this (live) process's
    try:
        pid, root = driver.stdout.readline().split()
        assert any(Path(root).rglob("*")), "the server wrote its state"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(5)
        deadline = time.monotonic() + 5
        while alive(int(pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(int(pid)), "the server outlived its SIGKILLed driver"
        assert Path(root).is_dir()  # nothing runs at SIGKILL
        nxt = subprocess.run([sys.executable, "-c", "from agentworld.domains.mcp.env import "
                              "McpEnv; e = McpEnv(server='notes'); e.reset(); e.close()"],
                             capture_output=True, text=True, timeout=120, check=False)
        assert nxt.returncode == 0, nxt.stderr[-2000:]
        assert not Path(root).exists(), "the killed driver's state directory was not swept"
        assert not Path(f"{root}.sweep-{os.getpid()}").exists()
        assert Path(live).is_dir()  # a live process's directory is kept
    finally:
        driver.kill()
        driver.wait()
        os.rmdir(live)
