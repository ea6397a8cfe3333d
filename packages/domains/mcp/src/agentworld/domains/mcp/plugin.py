"""Plugin entry point (group ``agentworld``, name ``mcp``).

Registers the ``mcp`` domain (a plain ``hookimpl``: the data-only stand-in of
agentworld-domain-awb registers ``trylast``, so this one replaces it) and
``agentworld/mcp-v0`` with Gymnasium; the domain module is imported only when the factory is
called.
"""

from __future__ import annotations

from typing import Any

from agentworld.core.hookspecs import Register, hookimpl
from agentworld.domains.mcp.registration import register_envs

register_envs()


def _make_domain() -> Any:
    from agentworld.domains.mcp.domain import McpDomain

    return McpDomain()


@hookimpl
def register_domains(register: Register) -> None:
    """Register ``mcp``."""
    register("mcp", _make_domain)
