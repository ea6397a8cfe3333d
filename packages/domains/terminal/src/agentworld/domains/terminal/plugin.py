"""Plugin entry point (group ``agentworld``, name ``terminal``).

Registers the ``terminal`` domain; the domain module is imported only when
the factory is called, so listing plugins stays cheap.
"""

from __future__ import annotations

from typing import Any

from agentworld.core.hookspecs import Register, hookimpl


def _make_domain() -> Any:
    from agentworld.domains.terminal.domain import TerminalDomain

    return TerminalDomain()


@hookimpl
def register_domains(register: Register) -> None:
    """Register ``terminal``."""
    register("terminal", _make_domain)
