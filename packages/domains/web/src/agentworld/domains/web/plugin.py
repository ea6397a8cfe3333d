"""Plugin entry point (group ``agentworld``, name ``web``).

Registers the real ``web`` domain, replacing the data-only AgentWorldBench stand-in of the same
name (``agentworld-domain-awb`` registers it with priority -1). The domain module (and
Playwright) is imported only when the factory runs.
"""

from __future__ import annotations

from typing import Any

from agentworld.core.hookspecs import Register, hookimpl


def _make_domain() -> Any:
    from agentworld.domains.web.domain import WebDomain

    return WebDomain()


@hookimpl
def register_domains(register: Register) -> None:
    """Register ``web`` (replacing the data-only AgentWorldBench stand-in)."""
    register("web", _make_domain)
