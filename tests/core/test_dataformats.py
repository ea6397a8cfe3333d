"""Dataset files in every kind (episodes, AgentWorldBench rows, chat messages) and container
(.jsonl, .jsonl.gz, .parquet): round trips, `agentworld convert`, `train --data`, and
`datasets.load_dataset` on each file written."""

from __future__ import annotations

import gzip
import json

import pytest
from typer.testing import CliRunner

from agentworld.core import dataformats as df
from agentworld.app.cli import app
from agentworld.app.commands.train import _training_episodes
from agentworld.core.formats import OBS_OPEN, sft_pair
from agentworld.core.io import write_episodes
from agentworld.core.types import Action, Episode, Observation, Step, Task

CONTAINERS = ["jsonl", "jsonl.gz", "parquet"]


def make_episode(n_steps: int, episode_id: str) -> Episode:
    prompt = "user@sandbox:~$ "
    steps = [
        Step(action=Action(text=f"echo {k}"), observation=Observation(text=f"{k}\n{prompt}"))
        for k in range(n_steps)
    ]
    return Episode(id=episode_id, domain="terminal", system_prompt="You simulate a bash terminal.",
                   task=Task(id="t0", domain="terminal", instruction="print numbers"),
                   initial_observation=Observation(text=prompt), steps=steps)


def _episodes():
    eps = [make_episode(3, "ep0"), make_episode(2, "ep1")]
    eps[0].steps[0].info = {"exit_code": 0, "nested": {"a": [1, 2]}}
    eps[1].metadata["history_window"] = 1  # a Markov episode: windowed prompts
    return eps


@pytest.mark.parametrize("ext", CONTAINERS)
def test_episodes_round_trip_in_every_container(ext, tmp_path):
    eps = _episodes()
    url = str(tmp_path / f"e.{ext}")
    assert df.write_as(url, eps, "episodes") == 2
    back, note = df.read_any_episodes(url)
    assert note is None and back == eps
    if ext == "jsonl.gz":
        assert json.loads(gzip.open(url, "rt").readline())["id"] == "ep0"  # really gzip


@pytest.mark.parametrize("ext", CONTAINERS)
def test_messages_rows_are_the_sft_pairs(ext, tmp_path):
    eps = _episodes()
    url = str(tmp_path / f"m.{ext}")
    why = [[f"because {t}" for t in range(len(e.steps))] for e in eps]
    assert df.write_as(url, eps, "messages", rationales=why) == 5
    rows = [row for _, row in df.read_rows(url)]
    assert df.sniff(url) == "messages"
    for row in rows:
        e = next(e for e in eps if e.id == row["episode_id"])
        prompt, target = sft_pair(e, row["turn"], why[eps.index(e)][row["turn"]])
        assert row["messages"] == [*prompt, {"role": "assistant", "content": target}]
        assert row["domain"] == "terminal"
        assert target.startswith("<think>because") and OBS_OPEN in target  # rationale kept
    back, note = df.read_any_episodes(url)  # read back: actions and observations
    assert note == "chat messages rows: 2 episodes"
    for a, b in zip(eps, back, strict=True):
        assert [(s.action.text, s.observation.text) for s in a.steps] == [
            (s.action.text, s.observation.text) for s in b.steps
        ]


@pytest.mark.parametrize("ext", CONTAINERS)
def test_load_dataset_reads_every_file_we_write(ext, tmp_path):
    from datasets import load_dataset

    eps = _episodes()
    builder = "parquet" if ext == "parquet" else "json"
    for kind, n in (("episodes", 2), ("messages", 5), ("agentworldbench", 5)):
        url = str(tmp_path / f"{kind}.{ext}")
        df.write_as(url, eps, kind)
        ds = load_dataset(builder, data_files=url, split="train", cache_dir=str(tmp_path / "c"))
        assert ds.num_rows == n
        if kind == "messages":
            assert ds[0]["messages"][0]["role"] == "system"
            assert ds[0]["messages"][-1]["role"] == "assistant"
        if kind == "agentworldbench":
            assert ds[0]["turn_idx"] == 1 and isinstance(ds[0]["prompt"], list)


def test_convert_every_direction_and_container(tmp_path):
    runner = CliRunner()
    src = str(tmp_path / "e.jsonl")
    write_episodes(src, _episodes())
    for to, ext in [("messages", "parquet"), ("messages", "jsonl.gz"),
                    ("agentworldbench", "parquet"), ("episodes", "parquet")]:  # fmt: skip
        out = str(tmp_path / f"{to}.{ext}")
        result = runner.invoke(app, ["convert", src, out, "--to", to])
        assert result.exit_code == 0, result.output
        assert df.sniff(out) == to
    # back to episodes from each, the kind told by the file
    for name in ["messages.parquet", "agentworldbench.parquet", "messages.jsonl.gz"]:
        out = str(tmp_path / f"back-{name}.jsonl")
        result = runner.invoke(app, ["convert", str(tmp_path / name), out])
        assert result.exit_code == 0 and "wrote 2 episodes" in result.output, result.output
        assert [len(e.steps) for e in _training_episodes(out)] == [3, 2]
    # train --data reads every kind and container as episodes
    for name in ["messages.parquet", "agentworldbench.parquet", "episodes.parquet", "e.jsonl"]:
        assert [len(e.steps) for e in _training_episodes(str(tmp_path / name))] == [3, 2]


def test_an_unknown_extension_is_an_error_not_a_jsonl_fallback(tmp_path):
    runner = CliRunner()
    src = str(tmp_path / "e.jsonl")
    write_episodes(src, _episodes())
    result = runner.invoke(app, ["convert", src, str(tmp_path / "out.csv"), "--to", "messages"])
    assert result.exit_code == 2
    assert "valid extensions: .jsonl, .jsonl.gz" in " ".join(result.output.replace("│", " ").split())
    assert not (tmp_path / "out.csv").exists()
    with pytest.raises(ValueError, match="unknown dataset file type"):
        df.write_as(str(tmp_path / "x.json"), _episodes(), "episodes")
    with pytest.raises(ValueError, match="unknown dataset file type"):
        _training_episodes(str(tmp_path / "episodes.txt"))


def test_messages_rows_keep_rewards_ends_task_and_states(tmp_path, episodes):
    """Converting ``messages`` rows back kept only texts: rewards and ends were lost."""
    from agentworld.core.dataformats import messages_rows, rows_to_episodes, write_rows

    episode = episodes[1]
    episode.steps[-1].reward, episode.steps[-1].terminated = 1.0, True
    episode.initial_observation.state = {"cwd": "/home/agent"}
    episode.steps[2].observation.state = {"cwd": "/tmp", "exit_code": 1}
    path = tmp_path / "sft.jsonl"
    write_rows(str(path), messages_rows([episode]))
    from agentworld.core.dataformats import read_rows

    [back] = rows_to_episodes(str(path), read_rows(str(path)))
    assert back.id == episode.id and back.task == episode.task
    assert [(s.reward, s.terminated, s.truncated) for s in back.steps] == \
        [(s.reward, s.terminated, s.truncated) for s in episode.steps]
    assert back.initial_observation.state == {"cwd": "/home/agent"}
    assert back.steps[2].observation.state == {"cwd": "/tmp", "exit_code": 1}
    from agentworld.core.formats import system_message

    assert system_message(back) == system_message(episode)
