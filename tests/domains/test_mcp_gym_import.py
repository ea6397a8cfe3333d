"""``agentworld/mcp-v0`` after importing the package, in a fresh interpreter each (issue 46:
importing ``agentworld.domains.mcp`` did not register it), while a server process, which
imports the same package, does not pay for Gymnasium."""

from __future__ import annotations

import subprocess
import sys


def run(code: str) -> str:
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert got.returncode == 0, got.stderr
    return got.stdout.strip()


def test_importing_the_package_registers_the_env_id() -> None:
    code = ("import gymnasium, agentworld.domains.mcp; "
            "print(gymnasium.spec('agentworld/mcp-v0').id)")
    assert run(code) == "agentworld/mcp-v0"


def test_make_with_the_module_prefix_builds_the_real_env() -> None:
    code = ("import gymnasium; e = gymnasium.make('agentworld.domains.mcp:agentworld/mcp-v0'); "
            "print(type(e.unwrapped).__name__); e.close()")
    assert run(code) == "McpEnv"


def test_a_server_process_does_not_import_gymnasium() -> None:
    code = "import sys, agentworld.domains.mcp.servers.notes; print('gymnasium' in sys.modules)"
    assert run(code) == "False"
