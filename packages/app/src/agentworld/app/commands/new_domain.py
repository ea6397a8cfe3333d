"""``agentworld new-domain NAME``: write a working domain package to start from
(:mod:`agentworld.app.domain_kit`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from agentworld.app.commands.root import app, console
from agentworld.app.domain_kit import write_package
from agentworld.core import plugins


@app.command("new-domain")
def new_domain_cmd(
    name: Annotated[str, typer.Argument(help="The domain's name, e.g. counter.")],
    out: Annotated[Path, typer.Option(help="Folder to write agentworld-domain-NAME in.")] = Path("."),
) -> None:
    """Write agentworld-domain-NAME: a counter environment, its tasks, a scripted policy and a
    DomainBase subclass in one module, the entry point that registers it, and a test. Install
    it into the project's environment with `uv pip install -e DIR` (a later `uv sync` removes
    it); then `agentworld collect --domain NAME` runs it."""
    if name in plugins.names("domain"):
        raise ValueError(f"a domain named {name!r} is already installed; choose another name")
    target = write_package(name, out)
    console.print(f"wrote {escape(str(target))}; next: uv pip install -e {escape(str(target))} "
                  "(into the environment agentworld runs in; a later uv sync removes it)",
                  soft_wrap=True)
