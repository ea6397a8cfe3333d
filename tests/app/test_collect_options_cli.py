"""``agentworld collect --set`` and a pipeline file's ``[collect] env_options`` run as a user runs
them: an unknown or ill-typed environment option is one stderr line naming it and the accepted
options with their types, exit status 2, no traceback, and no file made (issue 44 item 3, the
``--set`` tracebacks of issue 43); ``--overwrite`` is the one spelling of "replace the output"
(issue 46 item 9)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-c", "from agentworld.app.cli import main; main()"]
# Every option each domain's environment takes from --set (its options class).
ACCEPTED = {
    "terminal": ["max_steps (int, default 50)", "sandbox ('bubblewrap' | 'unshare' | None",
                 "root_parent (str | None", "render_mode ('ansi' | None",
                 "commands (Path | None, default None)", "home (Path | None, default None)",
                 "home_state_chars (int, default 3072)"],
    "mcp": ["server (str | None", "timeout_s (float, default 10.0)", "max_steps (int, default 50)"],
    "search": ["world_seed (int, default 0)", "corpus (Path | None, default None)"],
    "swe": ["max_steps (int, default 30)", "sandbox ('bubblewrap' | 'unshare' | None",
            "repo (Path | None, default None)", "test_cmd (str | None, default None)"],
    "web": ["timeout_s (float, default 5.0)", "chromium (str | None",
            "url (str | None, default None)", "site (Path | None, default None)"],
    "tty": ["max_steps (int, default 30)", "sandbox (", "root_parent (str | None"],
    "frozenlake-4x4": ["render_mode ('ansi' | None, default None)"],
}
# An ill-typed value per domain: its first numeric option, or a value outside a Literal.
ILL_TYPED = {"terminal": "max_steps=notanumber", "mcp": "max_steps=notanumber",
             "search": "world_seed=notanumber", "swe": "max_steps=notanumber",
             "web": "timeout_s=soon", "tty": "max_steps=notanumber",
             "frozenlake-4x4": "render_mode=human"}


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80"}  # a narrow terminal: the error must not wrap
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, env=env,
                          cwd=cwd)


def assert_one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.mark.parametrize("domain", sorted(ACCEPTED))
def test_an_unknown_option_is_one_line_listing_the_accepted_ones(tmp_path, domain):
    done = run(tmp_path, "collect", "--domain", domain, "--episodes", "1", "--out", "x.jsonl",
               "--set", "bogus_option=1")
    line = assert_one_line_error(
        done, f"error: domain '{domain}': unknown environment option 'bogus_option'; accepted: ",
        *ACCEPTED[domain])
    assert line.count("(") == len(ACCEPTED[domain])  # each accepted option, nothing else
    assert list(tmp_path.iterdir()) == []  # no output, no part file


@pytest.mark.parametrize("domain", sorted(ILL_TYPED))
def test_an_ill_typed_value_is_one_line_naming_option_and_value(tmp_path, domain):
    key, value = ILL_TYPED[domain].split("=")
    done = run(tmp_path, "collect", "--domain", domain, "--episodes", "1", "--out", "x.jsonl",
               "--set", ILL_TYPED[domain])
    assert_one_line_error(done, f"error: domain '{domain}': environment option {key}={value!r}: "
                          "Input should be", "; accepted: ", *ACCEPTED[domain])
    assert list(tmp_path.iterdir()) == []


def test_a_bad_option_leaves_an_existing_part_file_alone(tmp_path):
    """With ``--overwrite`` the part file of an interrupted run is deleted: not before the
    options are known to be good."""
    part = tmp_path / "x.jsonl.part"
    part.write_text("header\nepisode\n")
    done = run(tmp_path, "collect", "--domain", "frozenlake-4x4", "--episodes", "1", "--out",
               "x.jsonl", "--overwrite", "--set", "bogus_option=1")
    assert_one_line_error(done, "unknown environment option 'bogus_option'")
    assert part.read_text() == "header\nepisode\n" and not (tmp_path / "x.jsonl").exists()


def test_good_options_are_coerced_and_collect(tmp_path):
    done = run(tmp_path, "collect", "--domain", "frozenlake-4x4", "--episodes", "2", "--out",
               "x.jsonl", "--policy", "expert=1", "--set", "render_mode=ansi")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wrote 2 episodes" in done.stdout and (tmp_path / "x.jsonl").is_file()


def test_overwrite_is_a_flag_not_a_set_option(tmp_path):
    done = run(tmp_path, "collect", "--domain", "terminal", "--episodes", "1", "--out", "x.jsonl",
               "--set", "overwrite=true")
    assert_one_line_error(done, "--set overwrite=true: replacing OUT is the flag --overwrite")
    trained = run(tmp_path, "train", "sft", "--out", "ckpt", "--set", "overwrite=true")
    said = " ".join(trained.stderr.replace("│", " ").split())  # typer's usage box
    assert trained.returncode == 2 and "replacing a checkpoint in --out is the flag --overwrite" in said
    assert list(tmp_path.iterdir()) == []


def test_train_takes_overwrite_as_a_flag():
    from agentworld.app.cli import app
    from typer.main import get_command

    params = {p.name: p for p in get_command(app).commands["train"].params}  # type: ignore[attr-defined]
    assert params["overwrite"].opts == ["--overwrite"] and params["overwrite"].is_flag


def test_a_pipeline_files_env_options_are_checked_before_anything_is_written(tmp_path):
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(f'[run]\ndir = "{tmp_path / "run"}"\ndomain = "frozenlake-4x4"\n'
                        '[collect]\nepisodes = 2\npolicies = {expert = 1}\n'
                        'env_options = {bogus_option = 1}\n')
    done = run(tmp_path, "run", str(pipeline))
    assert_one_line_error(done, "error: [collect.env_options] domain 'frozenlake-4x4': unknown "
                          "environment option 'bogus_option'; accepted: render_mode")
    assert not (tmp_path / "run").exists()
