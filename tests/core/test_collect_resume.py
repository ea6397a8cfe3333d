"""Interrupted and misdirected collections (issue 22): a SIGKILLed collect resumes from its
part file, and output paths are checked before any episode runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from agentworld.core import plugins
from agentworld.app.cli import app
from agentworld.core.collect import collect
from agentworld.core.io import (
    DatasetError,
    OutputError,
    check_output,
    read_episodes,
    write_episodes,
)
from agentworld.core.partfile import PartFileError
from typer.testing import CliRunner

EXAMPLE_SRC = Path(__file__).parents[2] / "examples" / "agentworld-domain-echo" / "src"
MIX = {"random": 1.0}


@pytest.fixture
def echo(monkeypatch):
    """The example echo domain, counting the episodes it runs."""
    monkeypatch.syspath_prepend(str(EXAMPLE_SRC))
    from agentworld_echo import EchoDomain, EchoEnv

    class Counting(EchoDomain):
        resets = 0

        def make_env(self, **kwargs):
            domain = self

            class Env(EchoEnv):
                def reset(self, **kw):
                    domain.resets += 1
                    return super().reset(**kw)

            return Env()

    return Counting()


def content(episodes) -> list[dict]:
    return [e.model_dump(mode="json", exclude={"id"}) for e in episodes]


def test_a_sigkilled_collect_keeps_its_episodes_and_resumes(echo, tmp_path):
    part = tmp_path / "out.jsonl.part"
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(EXAMPLE_SRC)!r})
        from agentworld_echo import EchoDomain, EchoEnv
        from agentworld.core.collect import collect
        step = EchoEnv.step
        EchoEnv.step = lambda self, action: (time.sleep(0.05), step(self, action))[1]
        collect(EchoDomain(), 40, policies={MIX!r}, seed=3, workers=2, part={str(part)!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not part.exists() or part.read_bytes().count(b"\n") < 6):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = part.read_bytes().count(b"\n") - 1  # the header line is not an episode
    assert 5 <= kept < 40
    with part.open("ab") as f:
        f.write(b'{"index": 39, "episo')  # torn: a kill while writing
    resumed = collect(echo, 40, policies=MIX, seed=3, workers=2, part=str(part))
    assert echo.resets == 40 - kept  # only the missing episodes ran
    assert content(resumed) == content(collect(echo, 40, policies=MIX, seed=3, workers=1))


def test_a_part_file_of_other_settings_is_refused(echo, tmp_path):
    part = str(tmp_path / "p.part")
    collect(echo, 3, policies=MIX, seed=0, part=part)
    with pytest.raises(PartFileError, match="other settings.*delete the file to start over"):
        collect(echo, 4, policies=MIX, seed=0, part=part)
    lines = Path(part).read_text().splitlines()
    Path(part).write_text("\n".join([lines[0], "{broken", *lines[1:]]) + "\n")
    with pytest.raises(PartFileError, match=f"{part}, line 2: not JSON"):
        collect(echo, 3, policies=MIX, seed=0, part=part)


def test_check_output_before_any_work(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="dir is a directory; give a file path"):
        check_output(str(tmp_path / "dir"))
    with pytest.raises(OutputError, match="file exists; pass --overwrite"):
        check_output(str(tmp_path / "file"))
    check_output(str(tmp_path / "file"), overwrite=True)
    with pytest.raises(OutputError, match="file is a file, not a directory"):
        check_output(str(tmp_path / "file" / "x.jsonl"))
    with pytest.raises(OutputError, match="cannot write /proc/self/x.jsonl"):
        check_output("/proc/self/x.jsonl")
    check_output(str(tmp_path / "new" / "deeper" / "x.jsonl"))
    assert [p.name for p in (tmp_path / "new" / "deeper").iterdir()] == []  # no probe left


def test_collect_command_refuses_bad_outputs_and_resumes(echo, tmp_path, monkeypatch):
    monkeypatch.setattr(plugins, "get_domain", lambda name: echo)
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(app, ["collect", "--domain", "echo", "--episodes", "6", *args])

    (tmp_path / "dir").mkdir()
    done = run("--out", str(tmp_path / "dir"))
    assert isinstance(done.exception, OutputError) and "is a directory" in str(done.exception)
    assert list((tmp_path / "dir").iterdir()) == [] and echo.resets == 0
    assert isinstance(run("--out", "/proc/self/x.jsonl").exception, OutputError)
    assert echo.resets == 0  # refused before collecting
    out = tmp_path / "eps.jsonl"
    # an earlier, killed run left three finished episodes in the part file
    collect(echo, 6, policies=MIX, seed=0, workers=2, part=f"{out}.part")
    lines = Path(f"{out}.part").read_text().splitlines()
    Path(f"{out}.part").write_text("\n".join(lines[:4]) + "\n")
    echo.resets = 0
    done = run("--out", str(out))
    assert done.exit_code == 0, done.output
    assert "resuming" in done.output and echo.resets == 3
    assert not Path(f"{out}.part").exists() and len(read_episodes(str(out))) == 6
    before = out.read_bytes()
    done = run("--out", str(out), "--seed", "1")
    assert isinstance(done.exception, OutputError) and "--overwrite" in str(done.exception)
    assert out.read_bytes() == before
    assert run("--out", str(out), "--seed", "1", "--overwrite").exit_code == 0
    assert out.read_bytes() != before


def test_invalid_utf8_names_the_file_and_line(tmp_path, episodes):
    path = tmp_path / "e.jsonl"
    write_episodes(str(path), episodes)
    lines = path.read_bytes().splitlines()
    lines[1] = lines[1].replace(b'"echo', b'"\xff\xfeecho', 1)
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(DatasetError, match=rf"{path}, line 2: not UTF-8 \(byte 0xff"):
        read_episodes(str(path))


def test_convert_refuses_to_overwrite_its_source(tmp_path, episodes):
    path = tmp_path / "e.jsonl"
    write_episodes(str(path), episodes)
    before = path.read_bytes()
    os.symlink(path, tmp_path / "link.jsonl")
    for target in (path, tmp_path / "link.jsonl", tmp_path / "." / "e.jsonl"):
        done = CliRunner().invoke(app, ["convert", str(path), str(target)], env={"COLUMNS": "300"})
        assert done.exit_code == 2 and "is SOURCE itself" in done.output
    assert path.read_bytes() == before


def test_an_empty_pipeline_file_is_an_error(tmp_path):
    empty = tmp_path / "p.toml"
    empty.write_text("")
    done = CliRunner().invoke(app, ["run", str(empty)], env={"COLUMNS": "300"})
    assert done.exit_code == 2 and "has no stage table" in done.output, done.output


def test_train_quiet_turns_the_progress_bar_off(monkeypatch, tmp_path):
    seen = {}

    class Recorder:
        def train(self, episodes, options):
            seen.update(options)
            return options["output_dir"]

    monkeypatch.setattr(plugins, "get_trainer", lambda name: Recorder())
    args = ["train", "sft", "--data", str(tmp_path / "d.jsonl"), "--model", "m", "--output-dir", "o"]
    (tmp_path / "d.jsonl").write_text("")
    assert CliRunner().invoke(app, [*args, "--quiet"]).exit_code == 0
    assert seen["progress"] is False
    seen.clear()
    assert CliRunner().invoke(app, args).exit_code == 0
    assert "progress" not in seen  # the trainer's default: a bar only on a terminal
