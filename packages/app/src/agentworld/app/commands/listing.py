"""``agentworld plugins`` and ``agentworld domains``: what is installed."""

from __future__ import annotations

import textwrap
from typing import Any

from rich.table import Table
from rich.text import Text

from agentworld.app.commands.root import app, console
from agentworld.core import plugins
from agentworld.core.domain_base import domain_hooks


@app.command("plugins")
def plugins_cmd() -> None:
    """List installed plugins and the hooks each implements."""
    table = Table(title="agentworld plugins")
    for column in ("name", "package", "version", "hooks"):
        table.add_column(column)
    for row in plugins.plugin_table():
        table.add_row(row["name"], row["package"], row["version"], ", ".join(row["hooks"]))
    console.print(table)
    for kind in plugins.KINDS:
        listed = ", ".join(plugins.names(kind)) or "-"
        console.print(f"{kind.replace('_', ' ')}: {listed}")


def cannot_start(domain: Any) -> str | None:
    """Why ``domain``'s real environment cannot be made here (its one-line error), or ``None``
    when ``make_env()`` succeeds (the environment is closed at once)."""
    try:
        domain.make_env().close()
    except Exception as e:  # noqa: BLE001 -- the environment's own reason is the answer
        return (str(e).strip() or type(e).__name__).splitlines()[0]
    return None


@app.command("domains")
def domains_cmd() -> None:
    """List installed domains: whether a real environment runs here (its ``make_env()``
    succeeds; else its reason is listed first, or data-only: trained and measured from
    recorded trajectories), then each domain's environment facts.

    Fits the terminal's width (80 columns when not a terminal): a narrow table of names, then
    the facts one per line, wrapped with a hanging indent.
    """
    table = Table(title="agentworld domains")
    table.add_column("domain", no_wrap=True)
    table.add_column("real environment here")
    table.add_column("plugin", no_wrap=True)
    table.add_column("version", overflow="fold")
    facts: list[tuple[str, dict[str, str]]] = []
    for name in plugins.names("domain"):
        try:
            domain = plugins.get_domain(name)
        except Exception as e:  # noqa: BLE001 -- a broken domain is listed as such, the rest go on
            table.add_row(name, "[red]broken[/red]", plugins.owner("domain", name), "-")
            facts.append((name, {"error": str(e)}))
            continue
        offline = not domain_hooks(domain).has_environment
        missing = None if offline else cannot_start(domain)
        here = "no (data-only)" if offline else "no (see below)" if missing else "yes"
        table.add_row(name, here, plugins.owner("domain", name), domain.version)
        try:
            described = dict(domain.describe())
        except Exception as e:  # a domain that cannot run here still lists
            described = {"unavailable": str(e)}
        facts.append((name, {"unavailable": missing, **described} if missing else described))
    console.print(table)
    width = max(40, console.width)
    for name, described in facts:
        console.print(Text(name, style="bold"))
        for key, value in described.items():
            console.print(Text(textwrap.fill(f"{key}: {value}", width=width, initial_indent="  ",
                                             subsequent_indent="      ", break_on_hyphens=False,
                                             break_long_words=True)))
