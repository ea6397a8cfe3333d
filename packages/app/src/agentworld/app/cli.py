"""The ``agentworld`` command line (typer + rich): the console-script entry point.

Sub-commands live in :mod:`agentworld.app.commands`, one module per topic; they find
domains, trainers, backends and rewards by plugin name. Plugins add their own sub-commands
through the ``register_commands`` hook (:mod:`agentworld.app.hookspecs`).
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.markup import escape

from agentworld.app import hookspecs
from agentworld.app.commands import listing, data, train, models, run, doctor, new_domain  # noqa: F401,I001  (add commands, in help order)
from agentworld.app.commands.root import app, console
from agentworld.core import plugins
from agentworld.core.errors import EnvironmentUnavailableError, PluginRuntimeError

__all__ = ["app", "console", "main"]

hookspecs.add_to(plugins.pm)


def main() -> None:
    """Console-script entry point: loads plugins, lets them add commands, runs the app. A
    plugin, input or environment error (a ``ValueError`` or ``OSError`` included) is one
    ``error: ...`` line on stderr and exit status 2."""
    plugins.load_plugins().hook.register_commands(cli=app)
    try:
        app()
    except (
        plugins.UnknownPluginError,
        plugins.PluginContractError,
        EnvironmentUnavailableError,
        PluginRuntimeError,
        ValueError,
        OSError,
    ) as e:
        # on stderr, one line whatever the terminal's width (a pipe reads it whole)
        Console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {escape(str(e))}")
        sys.exit(2)
