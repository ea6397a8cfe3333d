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
