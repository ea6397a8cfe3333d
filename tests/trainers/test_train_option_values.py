"""Training option values (issue 30): non-finite numbers are refused by name, and
``--set output_dir=`` cannot redirect a checkpoint away from ``--output-dir``."""

from __future__ import annotations

import pytest
from agentworld.app.cli import app
from agentworld.app.config import CollectConfig
from agentworld.core import plugins
from agentworld.trainers.agents.lm.config import LmAgentConfig
from agentworld.trainers.training.config import ConfigError, SftConfig, validate_config
from pydantic import ValidationError
from typer.testing import CliRunner


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "+nan"])
def test_a_non_finite_learning_rate_is_refused_before_training(tmp_path, value):
    data = tmp_path / "d.jsonl"
    data.write_text("")
    out = tmp_path / "ckpt"
    done = CliRunner().invoke(app, ["train", "sft", "--data", str(data), "--model", "tiny-test",
                                    "--output-dir", str(out), "--set", f"lr={value}"])
    assert isinstance(done.exception, ConfigError)
    assert str(done.exception) == "invalid SftConfig: lr: Input should be a finite number"
    assert not out.exists()


def test_bad_numbers_name_the_option():
    with pytest.raises(ConfigError, match=r"^invalid SftConfig: lr: Input should be greater than 0$"):
        validate_config(SftConfig, {"output_dir": "o", "lr": -1e-3})
    with pytest.raises(ConfigError, match=r"lora\.dropout: Input should be a finite number"):
        validate_config(SftConfig, {"output_dir": "o", "lora": {"dropout": float("nan")}})
    with pytest.raises(ConfigError, match=r"^invalid LmAgentConfig: .*beta: Input should be a finite number"):
        validate_config(LmAgentConfig, {"output_dir": "o", "env": "real:terminal", "beta": float("inf")})
    with pytest.raises(ValidationError, match="finite number"):
        CollectConfig(policies={"scripted": float("inf")})
    assert validate_config(SftConfig, {"output_dir": "o", "lr": 5e-4}).lr == 5e-4


def test_set_output_dir_is_refused_for_output_dir(monkeypatch, tmp_path):
    trained = []

    class Recorder:
        def train(self, episodes, options):
            trained.append(options)
            return options["output_dir"]

    monkeypatch.setattr(plugins, "get_trainer", lambda name: Recorder())
    (tmp_path / "d.jsonl").write_text("")
    args = ["train", "sft", "--data", str(tmp_path / "d.jsonl"), "--model", "m",
            "--output-dir", str(tmp_path / "o")]
    done = CliRunner().invoke(app, [*args, "--set", "output_dir=/etc"], env={"COLUMNS": "300"})
    assert done.exit_code == 2 and trained == []
    message = " ".join(done.output.replace("│", " ").split())
    assert "Invalid value for --set: output_dir='/etc': give where the result goes with --out only" in message
    assert CliRunner().invoke(app, args).exit_code == 0 and trained[0]["output_dir"] == str(tmp_path / "o")
