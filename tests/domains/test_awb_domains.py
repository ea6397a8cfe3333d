"""The seven AgentWorldBench domains: data-only stand-ins (a real environment of the same name
wins), listed by `agentworld domains`, and trainable from rows with `agentworld train --data`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from agentworld.core import plugins
from agentworld.core.agentworldbench import DOMAINS
from agentworld.app.cli import app
from agentworld.core.types import Action, Observation
from agentworld.domains.awb.domain import DataOnlyDomain
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parents[1] / "core"))
from awb_records import card_rows, write_rows  # noqa: E402

#: AgentWorldBench domains with a real environment here (their own plugin replaces the stand-in).
REAL = {"terminal", "search", "mcp", "swe", "web"}


def test_seven_domains_registered_real_terminal_wins():
    names = plugins.names("domain")
    assert set(DOMAINS) <= set(names)
    assert {plugins.owner("domain", d) for d in REAL} == REAL  # the real environments
    assert {plugins.owner("domain", d) for d in DOMAINS if d not in REAL} == {"awb"}
    mcp = DataOnlyDomain("mcp")  # the stand-in itself (the real mcp domain replaces it)
    with pytest.raises(RuntimeError, match="'mcp' is data-only here"):
        mcp.make_env()
    with pytest.raises(RuntimeError, match="no task generator"):
        mcp.tasks().sample(1, seed=0)
    call = Action(text='```json\n{"name": "get_weather", "arguments": {}}\n```')
    assert mcp.action_type(call) == "get_weather"
    assert plugins.get_domain("web").action_type(Action(text="click [42]")) == "click"
    assert plugins.get_domain("android").action_type(Action(text="tap(3)")) == "tap"
    reference = Observation(text="**Environment Observation:**\na\nb\nc")
    assert mcp.score("a\nb\nc", reference) == 1.0
    assert mcp.score("a\nx", reference) == pytest.approx(2 * (1 / 2 * 1 / 3) / (1 / 2 + 1 / 3))


def test_domains_command_says_which_are_data_only():
    result = CliRunner().invoke(app, ["domains"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines()
            if line.startswith("│") and line.split("│")[1].strip()}
    for name in DOMAINS:
        assert ("yes" if name in REAL else "no (data-only)") in rows[name], rows[name]


def test_domains_command_fits_80_columns():
    result = CliRunner().invoke(app, ["domains"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    assert any(line.startswith("│ frozenlake-4x4-slippery │ yes ") for line in lines)  # unfolded
    assert "\nsearch\n  environment: real: BM25 search" in result.output  # facts under names


@pytest.mark.slow
def test_train_sft_on_rows_of_all_seven_domains(tmp_path):
    rows = [r for d in DOMAINS for r in card_rows(d, 40, 2)]
    data = write_rows(tmp_path / "logs.jsonl", rows)
    out = tmp_path / "ck"
    result = CliRunner().invoke(app, [
        "train", "sft", "--data", str(data), "--model", "tiny-test", "--output-dir", str(out),
        "--set", "tokenizer=train", "--set", "vocab_size=400", "--set", "max_steps=2",
        "--set", "batch_size=4"])
    assert result.exit_code == 0, result.output
    assert "14 rows, 7 trajectories" in " ".join(result.output.split())
    log = [json.loads(x) for x in (out / "train_log.jsonl").read_text().splitlines()]
    assert log and all(x.get("loss", 1.0) > 0 for x in log)
    assert (out / "config.json").exists()
