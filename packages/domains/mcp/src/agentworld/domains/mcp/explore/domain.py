"""``ExplorerDomain``: the mcp domain on a server that is not one of ours, whose tasks come from
the server's own tool list (:class:`~agentworld.domains.mcp.explore.mcp.ExplorerTaskSampler`).
It is defined beside :class:`~agentworld.domains.mcp.domain.McpDomain`, whose
``for_environment`` builds it (one module, so neither imports the other); importable from here."""

from __future__ import annotations

from agentworld.domains.mcp.domain import ExplorerDomain

__all__ = ["ExplorerDomain"]
