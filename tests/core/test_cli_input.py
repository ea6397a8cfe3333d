"""What the command line does with a user's input: defaults taken from the domain and the
checkpoint, and errors that keep their bracketed parts (config tables, option names)."""

import json

import pytest
from agentworld.core import plugins
from agentworld.app.cli import app
from agentworld.app.commands.models import _domain_for
from agentworld.core.io import read_episodes, write_episodes
from agentworld.core.types import Action, Episode, Observation, Step
from test_plugins import cli, install_as_entry_point
from typer.testing import CliRunner


def test_collect_defaults_to_the_domains_own_policies(tmp_path):
    env = install_as_entry_point(tmp_path / "site")
    out = tmp_path / "echo.jsonl"
    run = cli("collect", "--domain", "echo", "--episodes", "6", "--out", str(out), env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    episodes = read_episodes(str(out))
    assert [e.metadata["policy"] for e in episodes] == ["random"] * 6
    assert all(e.steps[-1].action.text == "bye" and e.steps[-1].observation.text == "BYE"
               for e in episodes)
    assert len({len(e.steps) for e in episodes}) > 1  # the example's episodes vary in length


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
    assert "[evaluate]" in run.stderr and "[collect.episodes]" in run.stderr, run.stderr


def test_eval_refuses_an_unknown_domain_before_loading_anything(tmp_path):
    (tmp_path / "none.jsonl").write_text("")  # paths that pass the early checks: the domain fails
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "config.json").write_text("{}")
    run = cli("eval", "--data", str(tmp_path / "none.jsonl"), "--model", str(tmp_path / "none"),
              "--out", str(tmp_path / "out"), "--domain", "nope", env=None, cwd=tmp_path)
    assert run.returncode == 2
    assert "unknown domain 'nope'" in run.stderr and "terminal" in run.stderr
    assert not (tmp_path / "out").exists()


def test_eval_and_simulate_take_the_checkpoints_domain(tmp_path):
    (tmp_path / "agentworld.json").write_text(json.dumps({"domain": "classic"}))
    assert _domain_for(str(tmp_path), None) == "classic"
    assert _domain_for(str(tmp_path), "terminal") == "terminal"
    assert _domain_for(str(tmp_path / "no-card"), None) == "terminal"
    with pytest.raises(plugins.UnknownPluginError, match="installed domains"):
        _domain_for(str(tmp_path), "nope")


def test_a_pipeline_checks_every_stage_before_training(tmp_path):
    from agentworld.app.config import load_config
    from agentworld.app.pipeline import run_pipeline

    path = tmp_path / "typo.toml"
    path.write_text(f"[run]\ndir = '{tmp_path / 'run'}'\n[collect]\nepisodes = 20\n"
                    "[cpt]\nmodel = 'tiny-test'\ntokenizer = 'train'\n[sft]\ntime_budgett_s = 5\n")
    with pytest.raises(ValueError, match=r"\[sft\] invalid SftConfig: unknown option 'time_budgett_s'"):
        run_pipeline(load_config(str(path)))
    assert not (tmp_path / "run" / "checkpoints").exists()  # collected, nothing trained
    path.write_text(f"[run]\ndir = '{tmp_path / 'run'}'\ndomain = 'nope'\n[collect]\nepisodes = 20\n")
    with pytest.raises(plugins.UnknownPluginError, match="unknown domain 'nope'"):
        run_pipeline(load_config(str(path)))


def test_convert_tells_the_direction_from_the_source(tmp_path):
    episodes = tmp_path / "episodes.jsonl"
    write_episodes(str(episodes), [Episode(
        id="e1", domain="toy", initial_observation=Observation(text="$ "),
        steps=[Step(action=Action(text="ls"), observation=Observation(text="a\n$ "))])])
    runner = CliRunner()
    bench, back = tmp_path / "bench.jsonl", tmp_path / "back.jsonl"
    to_bench = runner.invoke(app, ["convert", str(episodes), str(bench)])
    assert to_bench.exit_code == 0 and "wrote 1 AgentWorldBench records" in to_bench.output
    to_episodes = runner.invoke(app, ["convert", str(bench), str(back)])  # no --to: told by the file
    assert to_episodes.exit_code == 0 and "wrote 1 episodes" in to_episodes.output
    assert read_episodes(str(back))[0].steps[0].action.text == "ls"

    def message(result):
        return " ".join(result.output.replace("│", " ").split())

    again = runner.invoke(app, ["convert", str(bench), str(tmp_path / "x.jsonl"), "--to", "agentworldbench"])
    assert again.exit_code == 2
    assert "is agentworldbench JSONL already: pass --to episodes (or no --to)" in message(again)
    wrong = runner.invoke(app, ["convert", str(episodes), str(tmp_path / "x.jsonl"), "--to", "episodes"])
    assert "is episodes JSONL already: pass --to agentworldbench" in message(wrong)
    assert not (tmp_path / "x.jsonl").exists()
    other = tmp_path / "other.jsonl"
    other.write_text('{"text": "hello"}\n')
    unknown = runner.invoke(app, ["convert", str(other), str(tmp_path / "x.jsonl")])
    assert unknown.exit_code == 2 and "neither an episode nor an AgentWorldBench record" in message(unknown)
