"""Every member builds its own wheel; core + terminal (+ the example plugin) install and work alone, without torch."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
UV = os.environ.get("UV") or shutil.which("uv")
MEMBERS = ["agentworld", "agentworld_core", "agentworld_domain_terminal", "agentworld_domain_classic", "agentworld_domain_awb",
           "agentworld_rewards",
           "agentworld_trainers", "agentworld_sim"]

pytestmark = pytest.mark.skipif(UV is None, reason="needs the uv executable (run the suite with `uv run`)")


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result


def test_wheels_per_member_and_core_plus_terminal_alone(tmp_path):
    dist = tmp_path / "dist"
    run(UV, "build", "--all-packages", "--wheel", "-o", str(dist), "-q", cwd=ROOT)
    wheels = {w.name.split("-")[0]: w for w in dist.glob("*.whl")}
    assert sorted(wheels) == sorted(MEMBERS)

    venv = tmp_path / "venv"
    run(UV, "venv", "-q", "--python", sys.executable, str(venv))
    python = venv / "bin" / "python"
    example = ROOT / "examples" / "agentworld-domain-echo"  # the README's third-party plugin
    run(UV, "pip", "install", "-q", "--python", str(python),
        str(wheels["agentworld_core"]), str(wheels["agentworld_domain_terminal"]), str(example))
    no_torch = subprocess.run([str(python), "-c", "import torch"], capture_output=True)
    assert no_torch.returncode != 0, "core + terminal must not pull in torch"

    env = {**os.environ, "COLUMNS": "200"}
    env.pop("VIRTUAL_ENV", None)
    listed = run(str(venv / "bin" / "agentworld"), "domains", env=env, cwd=tmp_path)
    assert "terminal" in listed.stdout and "echo" in listed.stdout
    out = tmp_path / "eps.jsonl"
    run(str(venv / "bin" / "agentworld"), "collect", "--domain", "terminal", "--episodes", "2",
        "--policy", "scripted=1", "--out", str(out), env=env, cwd=tmp_path)
    check = run(str(python), "-c",
                "from agentworld.core.io import read_episodes;"
                f"e = read_episodes({str(out)!r}); print(len(e), sum(len(x.steps) for x in e))")
    n_episodes, n_steps = map(int, check.stdout.split())
    assert n_episodes == 2 and n_steps >= 2
