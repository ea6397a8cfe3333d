"""Plugin entry point (group ``agentworld``, name ``search``).

Registers the real ``search`` domain. The data-only stand-in of the same name
(``agentworld-domain-awb``) registers ``trylast``, so pluggy calls it first and this
registration, made after it, replaces it in the registry (last registration wins,
:mod:`agentworld.core.plugins`). The domain module is imported only when the factory runs.
"""

from __future__ import annotations

from typing import Any

from agentworld.core.hookspecs import Register, hookimpl


def _make_domain() -> Any:
    from agentworld.domains.search.domain import SearchDomain

    return SearchDomain()


@hookimpl
def register_domains(register: Register) -> None:
    """Register ``search`` (replacing the data-only AgentWorldBench stand-in)."""
    register("search", _make_domain)
