"""Data is not configuration: an mcp episode whose recorded fields name a shell command line
(``server: "sh -c 'touch MARKER'"`` in its task's setup, its states, its metadata, and so in
the AgentWorldBench rows written from it) goes through every reader (``convert`` to every
target, ``--reasoning`` included; SFT data preparation with domain rationales; ``eval``;
``bench infer``/``score``; the domain's prompt, listing and real environment) and the command
never runs: the marker file is never made. The CLI commands run as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agentworld.core.types import Action, Episode, Observation, Step, Task

CLI = [sys.executable, "-c", "from agentworld.app.cli import main; main()"]


def agentworld(*args: str | Path, cwd: Path) -> str:
    got = subprocess.run([*CLI, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert got.returncode == 0, f"agentworld {' '.join(map(str, args))}:\n{got.stdout}\n{got.stderr}"
    return got.stdout


def hostile_episode(server: str) -> Episode:
    call = '{"name": "create_note", "arguments": {"title": "a", "body": "b"}}'
    read = '{"name": "read_note", "arguments": {"title": "a"}}'
    state = {"server": server, "data": None}
    task = Task(id="t-0", domain="mcp", instruction="Write a note.", kind="free",
                setup={"server": server, "calls": []}, check={"all": [{"answer": "b"}]})
    return Episode(id="e-0", domain="mcp", task=task, system_prompt="You simulate a server.",
                   initial_observation=Observation(text="Connected.", state=state),
                   steps=[Step(action=Action(text=call), observation=Observation(
                              text='{"created": {"title": "a"}}', state=state), reward=0.0),
                          Step(action=Action(text=read), observation=Observation(
                              text='{"body": "b"}', state=state), reward=1.0, terminated=True)],
                   metadata={"server": server, "source": "real", "policy": "scripted"})


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[Path, Path]:
    """``(directory, marker)``: ``episodes.jsonl`` of one hostile episode in ``directory``."""
    root = tmp_path_factory.mktemp("hostile")
    marker = root / "MARKER"
    episode = hostile_episode(f"sh -c 'touch {marker}'")
    (root / "episodes.jsonl").write_text(episode.model_dump_json() + "\n")
    return root, marker


def test_convert_every_target_runs_nothing(hostile) -> None:
    root, marker = hostile
    agentworld("convert", "episodes.jsonl", "awb.jsonl", "--to", "agentworldbench", cwd=root)
    row = json.loads((root / "awb.jsonl").read_text().splitlines()[-1])
    assert "touch" in json.dumps(row["agentworld"]["task"])  # the hostile field travels as data
    for source in ("episodes.jsonl", "awb.jsonl"):
        stem = source.split(".")[0]
        agentworld("convert", source, f"{stem}-msgs.jsonl", "--to", "messages", cwd=root)
        agentworld("convert", source, f"{stem}-why.jsonl", "--to", "messages", "--reasoning", cwd=root)
        agentworld("convert", source, f"{stem}.parquet", "--to", "episodes", cwd=root)
        rows = [json.loads(line) for line in (root / f"{stem}-why.jsonl").read_text().splitlines()]
        first = rows[0]["messages"][-1]["content"]
        assert first.startswith('<think>call create_note {"title": "a", "body": "b"}')
        assert "check:" not in first  # no tool list recorded: no schema check, no server
    agentworld("convert", "awb.jsonl", "back.jsonl", "--to", "episodes", cwd=root)
    agentworld("convert", "episodes-why.jsonl", "from-msgs.jsonl", "--to", "episodes", cwd=root)
    assert not marker.exists()


def test_eval_and_bench_run_nothing(hostile) -> None:
    root, marker = hostile
    (root / "bench").mkdir(exist_ok=True)
    agentworld("convert", "episodes.jsonl", "bench/mcp_test.jsonl", "--to", "agentworldbench",
               "--overwrite", cwd=root)
    for data in ("episodes.jsonl", "bench/mcp_test.jsonl"):
        out = root / f"eval-{Path(data).stem}"
        agentworld("eval", "--data", data, "--model", "copy", "--backend", "copy-previous",
                   "--domain", "mcp", "--out", out, cwd=root)
        assert json.loads((out / "metrics.json").read_text())
    for prompt in ("native", "public"):
        agentworld("bench", "infer", "bench", "--out", f"bench-{prompt}", "--model", "copy",
                   "--backend", "copy-previous", "--prompt", prompt, cwd=root)
        agentworld("bench", "score", "bench", "--out", f"bench-{prompt}", cwd=root)
    assert not marker.exists()


def test_sft_domain_rationales_run_nothing(hostile, tmp_path) -> None:
    """SFT data preparation (``SftTrainer.check`` and ``samples``: the rationales and the
    masked token windows) with ``reasoning = "domain"``; no model is trained."""
    from agentworld.core.dataformats import read_any_episodes
    from agentworld.trainers.training.config import SftConfig
    from agentworld.trainers.world_model import reasoning
    from agentworld.trainers.world_model.sft import SftTrainer
    from chatml import chatml_tokenizer

    root, marker = hostile
    episodes, _ = read_any_episodes(str(root / "episodes.jsonl"))
    cfg = SftConfig(reasoning="domain", output_dir=str(tmp_path / "sft"), tokenizer="train",
                    max_seq_len=4096)
    SftTrainer().check(episodes, cfg)
    [[first, second]] = reasoning.rationales(episodes, cfg, cfg.output_dir)
    assert first.startswith("call create_note") and "check:" not in first
    assert second.startswith("call read_note") and "check:" not in second
    tok = chatml_tokenizer([episodes[0].model_dump_json()], 400)
    [sample] = SftTrainer().samples(episodes, tok, cfg)
    assert "<think>call read_note" in tok.decode(sample.input_ids)
    assert not marker.exists()


def test_domain_and_real_env_refuse_a_server_named_by_a_task(hostile) -> None:
    from agentworld.domains.mcp.catalog import UntrustedServerError
    from agentworld.domains.mcp.domain import McpDomain
    from agentworld.domains.mcp.env import McpEnv

    root, marker = hostile
    episode = Episode.model_validate_json((root / "episodes.jsonl").read_text())
    domain = McpDomain()
    prompt = domain.system_prompt(episode.task)
    assert "named 'sh'" in prompt and "Available tools" not in prompt
    with pytest.raises(UntrustedServerError, match="names server \"sh -c 'touch .*neither one of ours"):
        domain.initial_observation(episode.task)
    env = McpEnv()
    with pytest.raises(UntrustedServerError, match="a server named by data .* never runs"):
        env.reset(options={"task": episode.task})
    env.close()
    assert domain.explain(episode.steps[0], episode.initial_observation.state).startswith(
        "call create_note")
    assert not marker.exists()


def test_recorded_tools_give_the_prompt_listing_and_check_without_a_server(hostile) -> None:
    """A task may carry its tool list (``setup["tools"]``), and a state at reset its listing:
    prompts, listings and the first step's schema check come from them alone."""
    from agentworld.domains.mcp.domain import McpDomain

    root, marker = hostile
    episode = Episode.model_validate_json((root / "episodes.jsonl").read_text())
    tool = {"name": "create_note", "description": "Make a note.", "inputSchema": {
        "type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
        "required": ["title", "body"]}}
    episode.task.setup["tools"] = [tool]  # type: ignore[union-attr]
    domain = McpDomain()
    assert '{"name":"create_note","description":"Make a note."' in domain.system_prompt(episode.task)
    listing = domain.initial_observation(episode.task)
    assert listing.splitlines() == ["Connected to MCP server 'sh'. 1 tools available:",
                                    "- create_note(title: string, body: string)"]
    state = {**episode.initial_observation.state, "listing": listing}  # type: ignore[dict-item]
    why = domain.explain(episode.steps[0], state)
    assert "check: arguments match the schema of create_note" in why
    episode.task.setup["tools"] = "sh"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r"mcp task 't-0': setup\['tools'\] must be a list"):
        domain.system_prompt(episode.task)
    assert not marker.exists()
