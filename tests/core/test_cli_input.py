"""What the command line does with a user's input: defaults taken from the domain and the
checkpoint, and errors that keep their bracketed parts (config tables, option names)."""

import json

import pytest
from agentworld.core import plugins
from agentworld.core.cli import _domain_for
from agentworld.core.io import read_episodes
from test_plugins import cli, install_as_entry_point


def test_collect_defaults_to_the_domains_own_policies(tmp_path):
    env = install_as_entry_point(tmp_path / "site")
    out = tmp_path / "echo.jsonl"
    run = cli("collect", "--domain", "echo", "--episodes", "3", "--out", str(out), env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert [e.metadata["policy"] for e in read_episodes(str(out))] == ["random"] * 3


@pytest.mark.parametrize("value", ["scripted", "scripted=abc", "=1", "random=-1"])
def test_a_bad_policy_weight_names_the_option(tmp_path, value):
    run = cli("collect", "--episodes", "1", "--policy", value, "--out", str(tmp_path / "x.jsonl"),
              env=None, cwd=tmp_path)
    assert run.returncode == 2
    assert "--policy" in run.stderr and "NAME=WEIGHT" in run.stderr and repr(value) in run.stderr


def test_config_errors_keep_the_table_they_name(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[run]\ndir = 'x'\n[collect]\nepisodes = 0\n[evaluate]\nmodel = 'm'\n")
    run = cli("run", str(bad), env=None, cwd=tmp_path)
    assert run.returncode == 2
    assert "[evaluate]" in run.stdout and "[collect.episodes]" in run.stdout, run.stdout


def test_eval_refuses_an_unknown_domain_before_loading_anything(tmp_path):
    run = cli("eval", "--data", str(tmp_path / "none.jsonl"), "--model", str(tmp_path / "none"),
              "--out", str(tmp_path / "out"), "--domain", "nope", env=None, cwd=tmp_path)
    assert run.returncode == 2
    assert "unknown domain 'nope'" in run.stdout and "terminal" in run.stdout
    assert not (tmp_path / "out").exists()


def test_eval_and_simulate_take_the_checkpoints_domain(tmp_path):
    (tmp_path / "agentworld.json").write_text(json.dumps({"domain": "classic"}))
    assert _domain_for(str(tmp_path), None) == "classic"
    assert _domain_for(str(tmp_path), "terminal") == "terminal"
    assert _domain_for(str(tmp_path / "no-card"), None) == "terminal"
    with pytest.raises(plugins.UnknownPluginError, match="installed domains"):
        _domain_for(str(tmp_path), "nope")


def test_a_pipeline_checks_every_stage_before_training(tmp_path):
    from agentworld.core.config import load_config
    from agentworld.core.pipeline import run_pipeline

    path = tmp_path / "typo.toml"
    path.write_text(f"[run]\ndir = '{tmp_path / 'run'}'\n[collect]\nepisodes = 20\n"
                    "[cpt]\nmodel = 'tiny-test'\ntokenizer = 'train'\n[sft]\ntime_budgett_s = 5\n")
    with pytest.raises(ValueError, match=r"\[sft\] invalid SftConfig: unknown option 'time_budgett_s'"):
        run_pipeline(load_config(str(path)))
    assert not (tmp_path / "run" / "checkpoints").exists()  # collected, nothing trained
    path.write_text(f"[run]\ndir = '{tmp_path / 'run'}'\ndomain = 'nope'\n[collect]\nepisodes = 20\n")
    with pytest.raises(plugins.UnknownPluginError, match="unknown domain 'nope'"):
        run_pipeline(load_config(str(path)))
