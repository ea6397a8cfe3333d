"""AgentWorldBench rows as the public card writes them: all seven domains, both list layouts,
U+2028 inside a text, duplicate keys, malformed rows, and our exports read the way the public
``eval.py`` reads them."""

from __future__ import annotations

import json
import re

import pytest
from agentworld.core import agentworldbench as awb
from agentworld.app.cli import app
from agentworld.core.formats import episode_messages, system_message
from agentworld.core.io import DatasetError, read_episodes, write_episodes
from awb_records import OBSERVATIONS, card_rows, public_load, public_messages, write_rows
from typer.testing import CliRunner


@pytest.mark.parametrize("layout", ["full", "prefix"])
@pytest.mark.parametrize("domain", awb.DOMAINS)
def test_card_rows_round_trip_in_every_domain(tmp_path, domain, layout):
    rows = card_rows(domain, 145256090131919, 3, layout) + card_rows(domain, 7, 2, layout)
    path = write_rows(tmp_path / f"{domain}_test.jsonl", rows)
    records = awb.read_records(str(path))
    assert [r.model_dump() for r in records] == rows
    episodes, report = awb.read_episodes(str(path))
    assert (report.rows, report.trajectories, report.duplicates, report.conflicts) == (5, 2, [], [])
    first = episodes[0]
    assert (first.id, first.domain, len(first.steps)) == ("145256090131919", domain, 3)
    assert first.steps[0].action.text.endswith(" #1") and "### Turn" not in first.steps[0].action.text
    assert first.steps[2].observation.text == f"{OBSERVATIONS[domain]} (3)"
    assert system_message(first) == rows[0]["system_str"]  # the sample's own system prompt
    assert episode_messages(first)[0]["content"] == rows[0]["system_str"]
    back = tmp_path / "back" / f"{domain}_test.jsonl"
    assert awb.export_jsonl(str(back), episodes, layout=layout) == 5
    assert [json.loads(line) for line in back.read_text("utf-8").split("\n") if line] == rows


def test_u2028_stays_inside_its_line(tmp_path):
    rows = card_rows("search", 1, 2)
    path = write_rows(tmp_path / "search_test.jsonl", rows)
    raw = path.read_text("utf-8")
    assert "\u2028" in raw and len(raw.splitlines()) > len(rows)  # str.splitlines would break it
    records = awb.read_records(str(path))
    assert len(records) == 2 and "savannas\u2028and" in records[0].response[0]


def test_duplicate_key_is_dropped_and_reported(tmp_path):
    rows = card_rows("android", 11, 3)
    path = write_rows(tmp_path / "android_test.jsonl", [*rows, rows[1]])  # as the public file
    episodes, report = awb.read_episodes(str(path))
    assert report.duplicates == [(4, "android", 11, 2)]
    assert "1 duplicate (task, id, turn_idx) dropped: line 4 (android id 11 turn 2)" in report.summary()
    assert len(episodes) == 1 and episodes[0].metadata["awb"]["turns"] == [1, 2, 3]


def test_task_path_names_the_domain(tmp_path):
    path = write_rows(tmp_path / "mcp_test.jsonl", card_rows("mcp", 3, 1, task="agentworld/mcp"))
    (episode,), _ = awb.read_episodes(str(path))
    assert episode.domain == "mcp"
    back = tmp_path / "b.jsonl"
    awb.export_jsonl(str(back), [episode])
    assert json.loads(back.read_text())["task"] == "agentworld/mcp"


@pytest.mark.parametrize(("edit", "field", "why"), [
    (lambda r: r.update(id="145256090131919"), "id", "valid integer"),
    (lambda r: r.update(turn_idx=0), "turn_idx", "greater than or equal to 1"),
    (lambda r: r.update(turn_idx=3), "turn_idx", re.escape("turn_idx 3 (1-based) exceeds len(prompt) = 2")),
    (lambda r: r.pop("system_str"), "system_str", "Field required"),
    (lambda r: r.update(prompt="### Turn 1"), "prompt", "valid list"),
])
def test_malformed_row_names_file_line_and_field(tmp_path, edit, field, why):
    rows = card_rows("web", 5, 2)
    edit(rows[1])
    path = write_rows(tmp_path / "web_test.jsonl", rows)
    with pytest.raises(DatasetError, match=rf"web_test\.jsonl, line 2: AgentWorldBench field {field}: .*{why}"):
        awb.read_records(str(path))


def test_invalid_json_names_the_line(tmp_path):
    path = tmp_path / "os_test.jsonl"
    path.write_text(json.dumps(card_rows("os", 1, 1)[0]) + "\n{not json\n")
    with pytest.raises(DatasetError, match=r"os_test\.jsonl, line 2: invalid JSON"):
        awb.read_records(str(path))


def test_exported_episodes_read_the_public_way(tmp_path, episodes):
    out = tmp_path / "bench" / "terminal_test.jsonl"
    assert awb.export_jsonl(str(out), episodes) == 3 + 4 + 1
    jobs = public_load(out.parent)
    assert len(jobs) == 8 and set(jobs[0]) == {*awb.FIELDS, "agentworld"}  # ours: ignored there
    assert all(isinstance(j["id"], int) and j["task"] == "terminal" for j in jobs)
    assert [j["turn_idx"] for j in jobs] == [1, 2, 3, 1, 2, 3, 4, 1]
    job = jobs[2]  # ep0, turn 3: echo 2
    assert job["current_prompt"] == "### Turn 3\n**Action:**\necho 2"
    messages = public_messages(job)
    assert messages[0] == {"role": "system", "content": system_message(episodes[0])}
    assert messages[1:] == [
        {"role": "user", "content": "### Turn 1\n**Action:**\necho 0"},
        {"role": "assistant", "content": "**Environment Observation:**\n0\nuser@sandbox:~$ "},
        {"role": "user", "content": "### Turn 2\n**Action:**\ntrue"},
        {"role": "assistant", "content": "**Environment Observation:**\nuser@sandbox:~$ "},
        {"role": "user", "content": "### Turn 3\n**Action:**\necho 2"},
    ]
    # the judge's reference: response[turn_idx - 1] without the marker
    assert job["response"][job["turn_idx"] - 1] == "**Environment Observation:**\n2\nuser@sandbox:~$ "
    # episodes -> rows -> episodes gives the same episodes, text-wise
    back, _ = awb.read_episodes(str(out))
    for a, b in zip(episodes, back, strict=True):
        assert [(s.action.text, s.observation.text) for s in a.steps] == \
            [(s.action.text, s.observation.text) for s in b.steps]
        assert system_message(a) == system_message(b)
        # ... and what the texts cannot hold comes back from the rows' own field
        assert (b.id, b.task, b.metadata["policy"]) == (a.id, a.task, a.metadata["policy"])


def test_rewards_ends_and_states_survive_the_rows(tmp_path, episodes):
    """Converting rows back kept only texts: 9 of 90 steps went from reward 1.0 to 0."""
    episode = episodes[1]
    episode.steps[-1].reward, episode.steps[-1].terminated = 1.0, True
    episode.steps[1].truncated = True
    episode.initial_observation.state = {"cwd": "/home/agent", "files": {"a.txt": "x"}}
    episode.steps[0].observation.state = {"cwd": "/tmp", "exit_code": 0}
    out = tmp_path / "terminal_test.jsonl"
    awb.export_jsonl(str(out), [episode])
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert [("states" in r["agentworld"]) for r in rows] == [False, False, False, True]
    [back], _ = awb.read_episodes(str(out))
    assert [(s.reward, s.terminated, s.truncated) for s in back.steps] == \
        [(s.reward, s.terminated, s.truncated) for s in episode.steps]
    assert back.initial_observation.state == episode.initial_observation.state
    assert back.steps[0].observation.state == {"cwd": "/tmp", "exit_code": 0}


def test_convert_both_ways_and_train_data_sniffing(tmp_path):
    rows = card_rows("swe", 9, 3, "prefix") + card_rows("swe", 9, 3, "prefix")[:1]
    source = write_rows(tmp_path / "swe_test.jsonl", rows)
    runner = CliRunner()
    eps = tmp_path / "eps.jsonl"
    result = runner.invoke(app, ["convert", str(source), str(eps)])
    assert result.exit_code == 0, result.output
    assert "4 rows, 1 trajectories; 1 duplicate" in result.output and "wrote 1 episodes" in result.output
    assert read_episodes(str(eps))[0].metadata["awb"]["turns"] == [1, 2, 3]
    back = tmp_path / "back.jsonl"
    result = runner.invoke(app, ["convert", str(eps), str(back), "--layout", "prefix"])
    assert result.exit_code == 0 and "wrote 3 AgentWorldBench records" in result.output
    assert [json.loads(x) for x in back.read_text().splitlines()] == rows[:3]
    assert awb.sniff(str(source)) == "agentworldbench" and awb.sniff(str(eps)) == "episodes"
    write_episodes(str(tmp_path / "empty.jsonl"), [])
    assert awb.sniff(str(tmp_path / "empty.jsonl")) is None
