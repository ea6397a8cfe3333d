"""Plugin entry point of agentworld-domain-awb: the seven AgentWorldBench domains, data-only.

Registered with priority -1 (:data:`STAND_IN_PRIORITY`): a plugin with a real environment under
the same name (``terminal``, ``mcp``, ...) registers with the default priority and replaces the
stand-in; two plugins of the same priority and name are an error
(:mod:`agentworld.core.plugins`).
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


STAND_IN_PRIORITY = -1  # below a real domain's default (none, counted as 0)


@hookimpl(trylast=True)
def register_domains(register: Register) -> None:
    """Register a data-only stand-in for each AgentWorldBench domain (priority -1)."""
    for name in DOMAINS:
        register(name, _factory(name), priority=STAND_IN_PRIORITY)
