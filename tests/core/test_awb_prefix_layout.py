"""``--layout prefix`` AgentWorldBench files round-trip without loss (issue 46, item 3): our rows
carry an ``agentworld`` field, and the reader kept the lists of a trajectory's first row only,
so a prefix file read back held each episode's first turn (373 steps became 60) in ``convert``
and in every ``--data``. Real terminal episodes, the real ``agentworld`` CLI in a subprocess,
both ways and both containers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from agentworld.core.dataformats import read_any_episodes
from agentworld.core.io import read_episodes

AGENTWORLD = str(Path(sys.executable).parent / "agentworld")


def run(*args: str, cwd: Path) -> str:
    result = subprocess.run([AGENTWORLD, *args], capture_output=True, text=True, timeout=300,
                            cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def content(episode) -> dict:
    """An episode without what the trip through rows adds to its metadata."""
    row = episode.model_dump(mode="json")
    for key in ("source", "awb"):
        row["metadata"].pop(key, None)
    for step in row["steps"]:
        step["info"] = {k: v for k, v in step["info"].items() if not k.startswith("awb_")}
    return row


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("prefix")
    run("collect", "--domain", "terminal", "--episodes", "6", "--seed", "4", "--policy",
        "scripted=1", "--policy", "random=1", "--out", "eps.jsonl", cwd=where)
    return where


@pytest.mark.parametrize("container", ["jsonl", "parquet"])
def test_a_prefix_file_round_trips_through_convert_both_ways(collected: Path,
                                                             container: str) -> None:
    where = collected
    original = read_episodes(str(where / "eps.jsonl"))
    steps = sum(len(e.steps) for e in original)
    assert steps > len(original)  # several turns per episode: a first-turn-only read shows
    rows = f"rows-{container}.{container}"
    out = run("convert", "eps.jsonl", rows, "--to", "agentworldbench", "--layout", "prefix",
              cwd=where)
    assert f"wrote {steps} AgentWorldBench records" in out
    back = f"back-{container}.jsonl"
    out = run("convert", rows, back, cwd=where)
    assert f"{steps} rows, {len(original)} trajectories" in out
    episodes = read_episodes(str(where / back))
    assert [len(e.steps) for e in episodes] == [len(e.steps) for e in original]
    assert [content(e) for e in episodes] == [content(e) for e in original]
    # what every --data reads
    data, _ = read_any_episodes(str(where / rows))
    assert [content(e) for e in data] == [content(e) for e in original]
    # and back to prefix rows: the same rows
    run("convert", back, f"again-{container}.{container}", "--to", "agentworldbench",
        "--layout", "prefix", cwd=where)
    if container == "jsonl":
        first = (where / rows).read_text().splitlines()
        again = (where / f"again-{container}.{container}").read_text().splitlines()
        assert [json.loads(x) for x in again] == [json.loads(x) for x in first]


def test_prefix_rows_in_any_order_rebuild_the_trajectory(collected: Path) -> None:
    where = collected
    run("convert", "eps.jsonl", "sorted.jsonl", "--to", "agentworldbench", "--layout", "prefix",
        cwd=where)
    lines = (where / "sorted.jsonl").read_text().splitlines()
    (where / "reversed.jsonl").write_text("\n".join(reversed(lines)) + "\n")
    run("convert", "reversed.jsonl", "unreversed.jsonl", cwd=where)
    original = {e.id: content(e) for e in read_episodes(str(where / "eps.jsonl"))}
    back = {e.id: content(e) for e in read_episodes(str(where / "unreversed.jsonl"))}
    assert back == original
