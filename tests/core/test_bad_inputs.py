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


def test_a_long_line_is_refused_with_bounded_memory(tmp_path):
    path = tmp_path / "big.jsonl.gz"
    line = b'{"id": "' + b"x" * (32 << 20) + b'"}\n'
    path.write_bytes(gzip.compress(episode(1).model_dump_json().encode() + b"\n" + line, 1))
    assert path.stat().st_size < 200_000  # 32 MiB of one line in a small file
    tracemalloc.start()
    try:
        with pytest.raises(DatasetError) as info:
            list(read_rows(str(path), max_line_bytes=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(info.value) == (f"{path}, line 2: longer than 1048576 bytes, the limit of a line "
                               "(max_line_bytes); split the record or raise the limit")
    assert peak < 8 << 20  # the limit plus a few read chunks, not the 32 MiB line
    # the default limit (64 MiB) reads it; lines split on "\n" only, in chunks
    rows = list(read_rows(str(path)))
    assert [n for n, _ in rows] == [1, 2] and len(rows[1][1]["id"]) == 32 << 20


def test_deep_nesting_is_one_line_naming_the_file(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text(episode(1).model_dump_json() + "\n" + '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(DatasetError) as info:
        read_episodes(str(path))
    assert str(info.value).startswith(f"{path}, line 2: JSON nested too deeply to read (over about ")
    assert "\n" not in str(info.value) and info.value.__cause__ is None


def test_a_damaged_parquet_file_is_named(tmp_path):
    good = tmp_path / "good.parquet"
    write_as(str(good), [episode(1), episode(2)], "episodes")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(good.read_bytes()[:-40])  # footer cut off
    with pytest.raises(DatasetError, match=rf"^{bad}: not a readable Parquet file \(.*magic bytes"):
        read_any_episodes(str(bad))
    assert [e.id for e in read_any_episodes(str(good))[0]] == ["e1", "e2"]
