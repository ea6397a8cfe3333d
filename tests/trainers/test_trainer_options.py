"""``agentworld train STAGE --options``: every settable key with its default and meaning."""

from __future__ import annotations

import pytest
from agentworld.app.cli import app
from agentworld.trainers.training.config import ConfigError, SftConfig, option_help, validate_config
from pydantic import BaseModel
from typer.testing import CliRunner


class Demo(BaseModel):
    """Options of a demo stage.

    Attributes:
        low, high: Bounds of the range, in tokens
            (inclusive).
        name: Who runs it; see :func:`agentworld.app.cli.main`.
    """

    low: int = 0
    high: int = 8
    name: str
    extra: list[int] = []


def test_option_help_reads_the_attributes_sections():
    rows = {key: (default, text) for key, default, text in option_help(Demo)}
    assert rows["low"] == ("0", "Bounds of the range, in tokens (inclusive).")
    assert rows["high"] == ("8", "Bounds of the range, in tokens (inclusive).")
    assert rows["name"] == ("(required)", "Who runs it; see `agentworld.app.cli.main`.")
    assert rows["extra"] == ("[]", "")  # undocumented: listed, without a meaning


def test_sft_options_inherit_docs_and_hide_programmatic_keys():
    rows = {key: (default, text) for key, default, text in option_help(SftConfig)}
    assert "callback" not in rows  # a Python callable: no TOML or --set value can give one
    assert rows["lr"][0] == "0.001"  # SftConfig's own default, over TrainConfig's 2e-3
    assert rows["weight_decay"] == ("0.01", "AdamW weight decay on matrices (norms and biases get none).")
    assert rows["reasoning"][1].startswith('`"none"` (targets are the observation block alone)')
    assert all(text for key, (default, text) in rows.items()), "every sft option is documented"
    with pytest.raises(ConfigError) as err:
        validate_config(SftConfig, {"output_dir": "x", "lrr": 1})
    valid = str(err.value).split("valid options: ")[1].split(", ")
    assert "lr" in valid and "callback" not in valid


def test_cli_lists_a_stages_options_without_an_output_dir():
    runner = CliRunner()
    listed = runner.invoke(app, ["train", "sft", "--options"])
    assert listed.exit_code == 0, listed.output
    assert "sft options: --set KEY=VALUE" in listed.output
    row = next(ln for ln in listed.output.splitlines() if ln.startswith("│ time_budget_s "))
    assert [cell.strip() for cell in row.split("│")[1:3]] == ["time_budget_s", "None"]
    assert "Wall-clock seconds" in row
    agent = runner.invoke(app, ["train", "agent", "--options"])
    assert agent.exit_code == 0 and "epsilon_decay_episodes" in agent.output
    missing = runner.invoke(app, ["train", "sft", "--data", "x.jsonl", "--model", "tiny"])
    assert missing.exit_code == 2 and "--out" in missing.output
