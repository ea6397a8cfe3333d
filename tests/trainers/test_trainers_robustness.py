"""Training under careless use and attack (issue 22): huge observations, re-runs, resume."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest
from agentworld.core.types import Observation, Step
from agentworld.sim.backends.hf import DamagedCheckpointError
from agentworld.trainers.training import checkpoint as ckpt
from agentworld.trainers.training.config import TrainConfig
from agentworld.trainers.training.base import corpus_texts
from agentworld.trainers.training.setup import OutputDirError
from agentworld.trainers.models.specs import ModelSpecError, check_model_spec, load_model
from agentworld.trainers.training.progress import Reporter
from agentworld.trainers.world_model.sft import SftTrainer
from agentworld.trainers.models.tokenizer import (
    MAX_RUN_CHARS,
    MAX_SAMPLE_CHARS,
    bounded_samples,
    train_tokenizer,
)

LETTERS = bytes(range(ord("a"), ord("z") + 1)) * 10  # 260 entries, enough for a 256-byte table


def _letters(n: int) -> str:
    """``n`` random lowercase letters without whitespace: one pre-tokenised word."""
    return os.urandom(n).translate(LETTERS[:256]).decode()


def test_bounded_samples_cut_long_runs_and_keep_short_texts():
    short = "ls -la\nfoo  bar\n"
    assert list(bounded_samples([short])) == [short]
    text = "head " + _letters(5 * MAX_RUN_CHARS + 7) + " tail"
    pieces = list(bounded_samples([text]))
    assert "".join(pieces) == text and len(pieces) == 6
    assert max(len(w) for p in pieces for w in p.split()) <= MAX_RUN_CHARS
    assert sum(map(len, bounded_samples(["x" * (3 * MAX_SAMPLE_CHARS)]))) == MAX_SAMPLE_CHARS


def test_tokenizer_training_on_one_50mb_observation_is_bounded(corpus):
    # One 50 MB observation without whitespace used to keep the BPE trainer busy for
    # more than 7 minutes (issue 22, item 12).
    first = corpus[0]
    huge = Step(action=first.steps[0].action, observation=Observation(text=_letters(50_000_000)))
    episodes = [first.model_copy(update={"steps": [huge, *first.steps[1:]]}), *corpus[1:8]]
    t = time.perf_counter()
    tok = train_tokenizer(corpus_texts(episodes), 300)
    assert time.perf_counter() - t < 60
    sample = "echo hello\nhello\nuser@sandbox:~$ "
    assert tok.decode(tok(sample)["input_ids"]) == sample


BASE = {"model": "tiny-test", "batch_size": 4, "max_seq_len": 128, "warmup_steps": 1, "lr": 3e-3,
        "seed": 7}


class Crash(RuntimeError):
    pass


def crash_at(step: int):
    def callback(record: dict) -> None:
        if record["step"] == step:
            raise Crash

    return callback


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / ckpt.LOG).read_text().splitlines()]


def sft(corpus, tokenizer_dir, out: Path, **extra) -> str:
    tokenizer = {"tokenizer": str(tokenizer_dir)} if tokenizer_dir else {}
    options = {**BASE, **tokenizer, "output_dir": str(out), "max_steps": 2}
    return SftTrainer().train(corpus[:8], {**options, **extra})


def test_rerun_without_resume_refuses_and_says_how(corpus, tokenizer_dir, tmp_path):
    out = tmp_path / "run"
    sft(corpus, tokenizer_dir, out)
    weights = (out / "model.safetensors").read_bytes()
    with pytest.raises(OutputDirError) as err:
        sft(corpus, tokenizer_dir, out, max_steps=3)
    assert str(err.value) == (
        f"output_dir {str(out)!r} holds a checkpoint of step 2; pass --set resume=true to "
        "continue it, --overwrite to replace it (overwrite = true in a pipeline file), or choose "
        "another --out"
    )
    assert (out / "model.safetensors").read_bytes() == weights
    # resume continues from step 2; overwrite starts again from step 0
    sft(corpus, tokenizer_dir, out, max_steps=3, resume=True, log_every=1)
    assert [r["step"] for r in records(out)] == [2, 3]
    (out / "model-00001-of-00002.safetensors").write_bytes(b"stale shard")
    sft(corpus, tokenizer_dir, out, max_steps=1, overwrite=True, log_every=1)
    assert [r["step"] for r in records(out)] == [1]
    assert not (out / "model-00001-of-00002.safetensors").exists()
    assert json.loads((out / ckpt.STATE / "state.json").read_text())["step"] == 1


def test_output_dir_that_is_a_file_is_named(corpus, tokenizer_dir, tmp_path):
    (tmp_path / "file").write_text("x")
    for out in (tmp_path / "file", tmp_path / "file" / "run"):
        with pytest.raises(OutputDirError, match=f"{tmp_path / 'file'}' is a file, not a directory"):
            sft(corpus, tokenizer_dir, out)


def test_a_failed_run_leaves_no_half_made_output_dir(corpus, tokenizer_dir, tmp_path):
    with pytest.raises(Crash):
        sft(corpus, tokenizer_dir, tmp_path / "a", log_every=1, callback=crash_at(1))
    assert not (tmp_path / "a").exists()
    # once a resumable checkpoint is saved, the directory stays for resume=true
    with pytest.raises(Crash):
        sft(corpus, tokenizer_dir, tmp_path / "b", log_every=1, save_every=1, callback=crash_at(2))
    assert ckpt.describe(tmp_path / "b") == "a checkpoint of step 1"
    # a directory the user made is never removed
    (tmp_path / "c").mkdir()
    with pytest.raises(Crash):
        sft(corpus, tokenizer_dir, tmp_path / "c", log_every=1, callback=crash_at(1))
    assert (tmp_path / "c").is_dir()


def test_resume_tolerates_a_torn_last_log_line_and_names_a_bad_one(corpus, tokenizer_dir, tmp_path):
    out = tmp_path / "run"
    options = {"max_steps": 4, "log_every": 1, "save_every": 2}
    with pytest.raises(Crash):
        sft(corpus, tokenizer_dir, out, **options, callback=crash_at(3))
    with (out / ckpt.LOG).open("a") as f:
        f.write('{"step": 4, "lo')  # the process died while writing
    sft(corpus, tokenizer_dir, out, **options, resume=True)
    assert [r["step"] for r in records(out)] == [1, 2, 3, 4]
    lines = (out / ckpt.LOG).read_text().splitlines()
    (out / ckpt.LOG).write_text("\n".join([lines[0], "garbage", *lines[1:]]) + "\n")
    with pytest.raises(ValueError, match=f"{out / ckpt.LOG}, line 2: not a log record"):
        sft(corpus, tokenizer_dir, out, **options | {"max_steps": 5}, resume=True)


def test_first_loss_after_resume_averages_the_same_steps(corpus, tokenizer_dir, tmp_path):
    # log every 4 steps, checkpoint every 2: the crash at the step-4 record resumes from
    # step 2, and the step-4 record must still average steps 1-4, not 3-4 alone.
    options = {"max_steps": 8, "log_every": 4, "save_every": 2}
    sft(corpus, tokenizer_dir, tmp_path / "whole", **options)
    with pytest.raises(Crash):
        sft(corpus, tokenizer_dir, tmp_path / "cut", **options, callback=crash_at(4))
    sft(corpus, tokenizer_dir, tmp_path / "cut", **options, resume=True)
    whole, cut = records(tmp_path / "whole"), records(tmp_path / "cut")
    assert [r["step"] for r in cut] == [4, 8]
    assert [r["loss"] for r in cut] == pytest.approx([r["loss"] for r in whole], rel=1e-6)


def test_checkpoint_files_respect_the_umask(corpus, tokenizer_dir, tmp_path):
    old = os.umask(0o022)
    try:
        out = Path(sft(corpus, tokenizer_dir, tmp_path / "run"))
    finally:
        os.umask(old)
    modes = {p.relative_to(out).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in out.rglob("*")}
    assert modes["model.safetensors"] == modes["agentworld.json"] == 0o644
    assert all(m in (0o644, 0o755) for m in modes.values()), modes


def test_progress_bar_only_on_a_terminal(monkeypatch):
    cfg = TrainConfig(output_dir="x")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    assert Reporter(cfg, 4).bar is None
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    shown = Reporter(cfg, 4)
    assert shown.bar is not None
    shown.close()
    assert Reporter(TrainConfig(output_dir="x", progress=False), 4).bar is None


def test_a_damaged_weight_file_is_named(corpus, tokenizer_dir, tmp_path):
    out = Path(sft(corpus, tokenizer_dir, tmp_path / "run", max_steps=1))
    weights = out / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])  # a copy cut short
    with pytest.raises(DamagedCheckpointError, match=f"cannot read the weights in {weights}: "):
        load_model(out)
    weights.write_bytes(b"\0" * 8 + data[8:])  # an overwritten header
    with pytest.raises(DamagedCheckpointError, match=f"{weights}.*damaged or incomplete"):
        sft(corpus, None, tmp_path / "again", model=str(out))


def test_a_model_path_that_is_a_file_is_called_a_file(tmp_path):
    (tmp_path / "passwd").write_text("root:x:0:0::/root:/bin/bash\n")
    with pytest.raises(ModelSpecError, match="passwd' is a file, not a checkpoint directory"):
        check_model_spec(str(tmp_path / "passwd"))
    with pytest.raises(ModelSpecError, match="is a directory without config.json"):
        check_model_spec(str(tmp_path))


def test_a_hub_id_follows_the_same_rule_offline(corpus, tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    hub_id = "agentworld-test/no-such-model"
    with pytest.raises(ModelSpecError, match="hub id owner/name with allow_hub=True"):
        sft(corpus, None, tmp_path / "a", model=hub_id, allow_hub=False)
    with pytest.raises(ModelSpecError) as err:
        sft(corpus, None, tmp_path / "b", model=hub_id)
    assert f"{hub_id!r}" in str(err.value) and "hub did not provide it" in str(err.value)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "b").exists()  # the failed run left no output directory


def _train_on_a_terminal(args: list[str], tmp_path: Path) -> str:
    """Run ``agentworld train ...`` with its output on a pseudo-terminal; what it printed."""
    import pty
    import subprocess

    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from agentworld.app.cli import main; main()", *args],
        stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=tmp_path, env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert proc.wait(timeout=300) == 0, b"".join(chunks).decode(errors="replace")
    os.close(master)
    return b"".join(chunks).decode(errors="replace")


def test_train_shows_progress_on_a_terminal(corpus, tokenizer_dir, tmp_path):
    # Off the terminal (and with --quiet, which sets progress=false) no bar is made:
    # test_progress_bar_only_on_a_terminal.
    from agentworld.core.io import write_episodes

    data = tmp_path / "train.jsonl"
    write_episodes(str(data), corpus[:8])
    args = ["train", "sft", "--data", str(data), "--model", "tiny-test",
            "--set", f"tokenizer={json.dumps(str(tokenizer_dir))}", "--set", "max_steps=2",
            "--set", "batch_size=4", "--set", "max_seq_len=128"]
    shown = _train_on_a_terminal([*args, "--output-dir", str(tmp_path / "a")], tmp_path)
    assert "step 2/2" in shown and "sft output ->" in shown
    # the masking method and the trained tokens per episode, before training (issue 46)
    line = next(x for x in shown.splitlines() if x.startswith("sft data:"))
    assert "chat masking 'markers'" in line and "from 8 episodes" in line, line
    median = int(line.split("median ")[1].split(",")[0])
    assert median > 0, line
