"""Off a terminal (a log file, CI), ``agentworld train`` prints progress lines while it trains;
it used to print nothing until the stage ended."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentworld.app.cli import app
from agentworld.core.io import write_episodes


def test_train_prints_progress_lines_when_output_is_not_a_terminal(corpus, tokenizer_dir, tmp_path):
    data = tmp_path / "train.jsonl"
    write_episodes(str(data), corpus[:8])
    args = ["train", "sft", "--data", str(data), "--model", "tiny-test",
            "--set", f"tokenizer={json.dumps(str(tokenizer_dir))}", "--set", "max_steps=3",
            "--set", "batch_size=4", "--set", "max_seq_len=128", "--set", "log_every=1"]  # fmt: skip
    runner = CliRunner()  # its stdout is no terminal
    done = runner.invoke(app, [*args, "--out", str(tmp_path / "a"), "--progress-every", "0"])
    assert done.exit_code == 0, done.output
    lines = [line for line in done.output.splitlines() if line.startswith("sft: step ")]
    assert [line.split(",")[0] for line in lines] == ["sft: step 1", "sft: step 2", "sft: step 3"]
    logged = [json.loads(x) for x in (tmp_path / "a" / "train_log.jsonl").read_text().splitlines()]
    assert [f"loss {r['loss']:.4g}" for r in logged] == [line.split(", ")[1] for line in lines]
    quiet = runner.invoke(app, [*args, "--out", str(tmp_path / "b"), "--quiet"])
    assert quiet.exit_code == 0 and "sft: step" not in quiet.output


def test_piped_train_prints_lines_on_its_own_cadence_whatever_log_every(
    corpus, tokenizer_dir, tmp_path
):
    """The real CLI in a subprocess with piped output: with the default ``log_every`` (10
    steps), --progress-every 0 gives a line per optimizer step (it gave one, at the end), and a
    long --progress-every only the first."""
    import subprocess
    import sys
    from pathlib import Path

    data = tmp_path / "train.jsonl"
    write_episodes(str(data), corpus[:8])
    agentworld = str(Path(sys.executable).parent / "agentworld")
    args = [agentworld, "train", "sft", "--data", str(data), "--model", "tiny-test",
            "--set", f"tokenizer={json.dumps(str(tokenizer_dir))}", "--set", "max_steps=6",
            "--set", "batch_size=4", "--set", "max_seq_len=128"]  # fmt: skip

    def steps(every: str, out: str) -> list[str]:
        done = subprocess.run([*args, "--out", str(tmp_path / out), "--progress-every", every],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        return [line.split(",")[0] for line in done.stdout.splitlines()
                if line.startswith("sft: step ")]

    assert steps("0", "a") == [f"sft: step {k}" for k in range(1, 7)]
    assert steps("3600", "b") == ["sft: step 1"]
    logged = (tmp_path / "a" / "train_log.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in logged] == [6]  # log_every is untouched
