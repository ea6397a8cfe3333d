"""Plugin entry point of agentworld-domain-awb: the seven AgentWorldBench domains, data-only.

Registered ``trylast``: the registry takes registrations in pluggy's order (``trylast``
implementations first), so a plugin with a real environment under the same name (``terminal``)
registers after these and replaces the stand-in.
"""

from __future__ import annotations

from typing import Any

from agentworld.core.answers import DOMAINS
from agentworld.core.hookspecs import Register, hookimpl


def _factory(name: str) -> Any:
    def build() -> Any:
        from agentworld.domains.awb.domain import DataOnlyDomain

        return DataOnlyDomain(name)

    return build


@hookimpl(trylast=True)
def register_domains(register: Register) -> None:
    """Register a data-only stand-in for each AgentWorldBench domain."""
    for name in DOMAINS:
        register(name, _factory(name))
