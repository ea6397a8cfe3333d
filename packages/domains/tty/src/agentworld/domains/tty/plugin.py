"""Plugin entry point (group ``agentworld``, name ``tty``).

Registers the ``tty`` domain; the domain module is imported only when the factory is called,
so listing plugins stays cheap.
"""

from __future__ import annotations

from typing import Any

from agentworld.core.hookspecs import Register, hookimpl


def _make_domain() -> Any:
    from agentworld.domains.tty.domain import TtyDomain

    return TtyDomain()


@hookimpl
def register_domains(register: Register) -> None:
    """Register ``tty``."""
    register("tty", _make_domain)
