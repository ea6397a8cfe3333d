"""Bad input files and targets (issue 30): a long line in a small ``.gz``, deep JSON nesting
and a damaged Parquet file are one-line errors naming the file; ``convert`` keeps an existing
target unless ``--overwrite``."""

from __future__ import annotations

import gzip
import tracemalloc

import pytest
from agentworld.app.cli import app
from agentworld.core.dataformats import read_any_episodes, read_rows, write_as
from agentworld.core.io import DatasetError, OutputError, read_episodes, write_episodes
from agentworld.core.types import Action, Episode, Observation, Step
from typer.testing import CliRunner


def episode(i: int) -> Episode:
    return Episode(id=f"e{i}", domain="toy", initial_observation=Observation(text="$ "),
                   steps=[Step(action=Action(text=f"echo {i}"), observation=Observation(text=f"{i}\n$ "))])


def test_convert_refuses_an_existing_target(tmp_path):
    source, target = tmp_path / "e.jsonl", tmp_path / "t.jsonl"
    write_episodes(str(source), [episode(1)])
    target.write_text("keep me\n")
    done = CliRunner().invoke(app, ["convert", str(source), str(target)])
    assert isinstance(done.exception, OutputError)
    assert str(done.exception) == f"{target} exists; pass --overwrite to replace it, or choose another path"
    assert target.read_text() == "keep me\n"
    done = CliRunner().invoke(app, ["convert", str(source), str(target), "--overwrite"])
    assert done.exit_code == 0, done.output
    assert read_any_episodes(str(target))[0][0].steps[0].action.text == "echo 1"
