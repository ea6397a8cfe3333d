"""``serve-openai`` with a checkpoint that does not exist fails before torch and the server
load (issue 46: it took 21 s to say so), with one line naming the path."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
from agentworld.app.cli import main
sys.argv = ["agentworld", "serve-openai", "--model", "/no/such/checkpoint"]
try:
    main()
except SystemExit as e:
    print("exit", e.code, "torch" in sys.modules)
"""


def test_a_missing_checkpoint_fails_before_torch_loads() -> None:
    got = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert got.stdout.strip().splitlines()[-1] == "exit 2 False", got.stdout + got.stderr
    assert "'/no/such/checkpoint' does not exist" in got.stderr + got.stdout
