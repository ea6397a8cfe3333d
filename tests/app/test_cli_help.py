"""``--help`` on an 80-column terminal: every option name is printed whole (rich's option
tables cut long ones, ``--max-transitio…``; below 100 columns the help is click's plain
text, which wraps)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

COMMANDS = [["collect"], ["eval"], ["serve"], ["serve-openai"], ["train"], ["run"],
            ["quickstart"], ["convert"], ["simulate"]]


def help_text(args: list[str], columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "TERMINAL_WIDTH": str(columns)}
    got = subprocess.run([sys.executable, "-c", "from agentworld.app.cli import main; main()", *args, "--help"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    return got.stdout


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_option_names_are_whole_at_80_columns(args: list[str]) -> None:
    from typer.main import get_command

    from agentworld.app.cli import app
    from agentworld.core import plugins

    plugins.load_plugins().hook.register_commands(cli=app)
    command = get_command(app)
    for name in args:
        command = command.commands[name]  # type: ignore[attr-defined]
    names = {opt for param in command.params for opt in [*param.opts, *param.secondary_opts]
             if opt.startswith("--")}
    text = help_text(args, 80)
    assert "…" not in text
    assert max(map(len, text.splitlines())) <= 80
    printed = set(re.findall(r"--[a-z0-9][a-z0-9-]*", text))
    assert names and names <= printed, sorted(names - printed)
