"""Real tool-domain episodes through AgentWorldBench and ``messages`` rows and back: every field
comes back (rewards, ends, task, states, step info, parsed calls, ids, metadata), and rows that
carry only texts are read with a warning naming what they lack."""

from __future__ import annotations

import json

import pytest
from agentworld.app.cli import app
from agentworld.core.collect import collect
from agentworld.core.dataformats import read_any_episodes
from agentworld.core.io import read_episodes, write_episodes
from agentworld.domains.mcp.domain import McpDomain
from typer.testing import CliRunner

PROVENANCE = ("source", "awb")  # where the rows came from: set by the reader


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    episodes = collect(McpDomain(), 4, policies={"scripted": 1.0}, seed=2, max_steps=8, workers=1)
    assert any(s.reward == 1.0 and s.terminated for e in episodes for s in e.steps)
    path = tmp_path_factory.mktemp("rows") / "episodes.jsonl"
    write_episodes(str(path), episodes)
    return path


def _dump(episode):
    row = episode.model_dump(mode="json")
    row["metadata"] = {k: v for k, v in row["metadata"].items() if k not in PROVENANCE}
    return row


@pytest.mark.parametrize("kind", ["agentworldbench", "messages"])
def test_every_field_survives_the_rows(source, tmp_path, kind):
    rows, back = tmp_path / "rows.jsonl", tmp_path / "back.jsonl"
    runner = CliRunner()
    assert runner.invoke(app, ["convert", str(source), str(rows), "--to", kind]).exit_code == 0
    result = runner.invoke(app, ["convert", str(rows), str(back), "--to", "episodes"])
    assert result.exit_code == 0 and "warning" not in result.output, result.output
    original, again = read_episodes(str(source)), read_episodes(str(back))
    assert [_dump(e) for e in again] == [_dump(e) for e in original]
    assert again[0].steps[0].info["tool"] and again[0].steps[0].action.name  # info, parsed call


def test_rows_with_texts_only_are_read_with_a_warning(source, tmp_path):
    runner = CliRunner()
    awb, chat = tmp_path / "awb.jsonl", tmp_path / "chat.jsonl"
    runner.invoke(app, ["convert", str(source), str(awb)])
    runner.invoke(app, ["convert", str(source), str(chat), "--to", "messages"])
    public = [{k: v for k, v in json.loads(line).items() if k != "agentworld"}
              for line in awb.read_text().splitlines()]
    awb.write_text("".join(json.dumps(r) + "\n" for r in public))
    bare = [{k: json.loads(line)[k] for k in ("messages", "episode_id", "turn")}
            for line in chat.read_text().splitlines()]
    chat.write_text("".join(json.dumps(r) + "\n" for r in bare))
    episodes, note = read_any_episodes(str(awb))
    assert len(episodes) == 4 and "warning: 4 of 4 trajectories have only texts" in note
    assert all(s.reward == 0.0 and not s.terminated for e in episodes for s in e.steps)
    episodes, note = read_any_episodes(str(chat))
    assert len(episodes) == 4 and note.endswith(
        "warning: some rows lack info, initial_state, metadata, reward, state, task, "
        "terminated, truncated: read as 0, false or empty (rows written by other tools carry "
        "the chat alone)")
