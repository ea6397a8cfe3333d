"""Every member builds its own wheel; the kernel + terminal (+ the example plugin) install and work
alone, without torch and without the application's CLI, plot, stats or parquet libraries; adding
the application (agentworld-app) gives the ``agentworld`` command over the same plugins."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
UV = os.environ.get("UV") or shutil.which("uv")
MEMBERS = ["agentworld", "agentworld_core", "agentworld_app", "agentworld_domain_terminal", "agentworld_domain_classic", "agentworld_domain_awb", "agentworld_domain_search", "agentworld_domain_mcp", "agentworld_domain_swe", "agentworld_domain_tty", "agentworld_domain_web",
           "agentworld_rewards",
           "agentworld_trainers", "agentworld_sim"]

pytestmark = pytest.mark.skipif(UV is None, reason="needs the uv executable (run the suite with `uv run`)")


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result


def test_wheels_per_member_and_kernel_plus_terminal_alone(tmp_path):
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
    absent = run(str(python), "-c", "import importlib.util as u; print(' '.join(m for m in "
                 "('torch', 'typer', 'rich', 'matplotlib', 'scipy', 'pyarrow') if u.find_spec(m)))")
    assert absent.stdout.split() == [], "the kernel + terminal must not pull these in"

    kernel_only = run(str(python), "-c",
                      "from agentworld.core import plugins; from agentworld.core.collect import collect;"
                      "print(' '.join(plugins.names('domain')));"
                      "e = collect(plugins.get_domain('terminal'), 1, policies={'scripted': 1.0}, seed=0);"
                      "print(len(e), len(e[0].steps))", cwd=tmp_path)
    listed, counts = kernel_only.stdout.strip().splitlines()
    assert {"terminal", "echo"} <= set(listed.split()) and counts.split()[0] == "1"

    run(UV, "pip", "install", "-q", "--python", str(python), str(wheels["agentworld_app"]),
        str(wheels["agentworld_core"]))
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
