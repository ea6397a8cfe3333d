"""Plugin entry point (group ``agentworld``, name ``swe``).

Registers the real ``swe`` domain with the default priority, so it replaces the data-only
AgentWorldBench stand-in of the same name (``agentworld-domain-awb``, priority -1). The domain
module is imported only when the factory runs.
"""

from __future__ import annotations

from typing import Any

from agentworld.core.hookspecs import Register, hookimpl


def _make_domain() -> Any:
    from agentworld.domains.swe.domain import SweDomain

    return SweDomain()


@hookimpl
def register_domains(register: Register) -> None:
    """Register ``swe`` (replacing the data-only AgentWorldBench stand-in)."""
    register("swe", _make_domain)
