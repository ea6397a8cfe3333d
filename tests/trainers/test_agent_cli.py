"""``agentworld train agent`` end to end on the real FrozenLake 4x4, and its bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from agentworld.app.cli import app

CMD = [sys.executable, "-c", "from agentworld.app.cli import main; main()"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CMD, *args], check=False, capture_output=True, text=True, timeout=300)


def test_cli_train_agent_real_env_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "agent"
    done = _run(
        "train",
        "agent",
        "--env",
        "real:frozenlake-4x4",
        "--output-dir",
        str(out),
        "--seed",
        "2",
        "--set",
        "episodes=300",
        "--set",
        "eval_episodes=20",
        "--set",
        "alpha=0.5",
        "--set",
        "epsilon_decay_episodes=200",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "agent output ->" in done.stdout and str(out) in done.stdout.replace("\n", "")
    m = json.loads((out / "metrics.json").read_text())
    assert (m["env"], m["domain"], m["policy"], m["mix"]) == (
        "real:frozenlake-4x4",
        "frozenlake-4x4",
        "q-learning",
        1.0,
    )
    assert m["episodes"] == m["real_episodes"] == 300 and len(m["returns"]) == 300
    assert m["real_steps"] > 300 and m["sim_steps"] == 0 and m["parse_failures"] == 0
    assert m["wall_s"] >= m["train_wall_s"] > 0 and m["real_steps_per_s"] > 0
    assert m["config"]["seed"] == 2 and m["config"]["alpha"] == 0.5
    assert m["eval"]["success_rate"] == 1.0 and m["eval"]["episodes"] == 20
    assert m["random_baseline"]["success_rate"] < m["eval"]["success_rate"]
    assert m["curve"][-1] > m["curve"][0]  # returns improve over training
    agent = json.loads((out / "agent.json").read_text())
    assert agent["num_episodes"] == 300 and agent["actions"] == ["left", "down", "right", "up"]


def test_cli_bad_input_is_reported_before_training(tmp_path: Path) -> None:
    out = tmp_path / "never"
    runner = CliRunner()
    bad_mix = runner.invoke(
        app,
        ["train", "agent", "--env", f"sim:{tmp_path}", "--mix", "1.5", "--output-dir", str(out)],
    )
    assert bad_mix.exit_code == 2 and "[0, 1]" in bad_mix.output
    no_data = runner.invoke(app, ["train", "sft", "--model", "tiny", "--output-dir", str(out)])
    assert no_data.exit_code == 2 and "--data" in no_data.output
    not_ckpt = _run("train", "agent", "--env", f"sim:{tmp_path}", "--output-dir", str(out))
    # Messages are matched whitespace-normalised: rich wraps them at the console width.
    assert not_ckpt.returncode == 2  # refused by the CLI before torch loads: a usage error box
    said = (not_ckpt.stdout + not_ckpt.stderr).replace("│", " ")
    assert "not a model checkpoint" in " ".join(said.split())
    unknown = _run("train", "agent", "--env", "real:frozenlake-9x9", "--output-dir", str(out))
    assert unknown.returncode == 2
    assert "unknown domain 'frozenlake-9x9'" in " ".join(unknown.stderr.split())
    typo = _run("train", "agent", "--env", "real:frozenlake-4x4", "--set", "episodez=3",
                "--output-dir", str(out))
    message = " ".join(typo.stderr.split())
    assert typo.returncode == 2 and "unknown option 'episodez'" in message
    assert "valid options:" in message and "errors.pydantic.dev" not in message
    assert not out.exists()
