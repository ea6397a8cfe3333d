"""``agentworld plugins`` and ``agentworld domains``: what is installed."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from agentworld.app.commands.root import app, console
from agentworld.core import plugins
from agentworld.core.protocols import OfflineDomain


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


@app.command("domains")
def domains_cmd() -> None:
    """List installed domains: whether a real environment runs here (else data-only: trained
    and measured from recorded trajectories), and their environment facts."""
    table = Table(title="agentworld domains")
    for column in ("domain", "real environment here", "version", "plugin", "facts"):
        table.add_column(column, overflow="fold")
    for name in plugins.names("domain"):
        domain = plugins.get_domain(name)
        offline = isinstance(domain, OfflineDomain) and not domain.has_environment
        real = "no (data-only)" if offline else "yes"
        try:
            facts = "; ".join(f"{k}: {v}" for k, v in domain.describe().items())
        except Exception as e:  # a domain that cannot run here still lists
            facts = f"unavailable: {e}"
        table.add_row(name, real, domain.version, plugins.owner("domain", name), Text(facts))
    console.print(table)
