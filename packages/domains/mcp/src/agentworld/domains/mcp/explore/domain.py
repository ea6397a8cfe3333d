"""``ExplorerDomain``: the mcp domain on a server that is not one of ours, whose tasks come from
the server's own tool list (:class:`~agentworld.domains.mcp.explore.mcp.ExplorerTaskSampler`)."""

from __future__ import annotations

from agentworld.domains.mcp.domain import McpDomain
from agentworld.domains.mcp.explore.mcp import ExplorerTaskSampler


class ExplorerDomain(McpDomain):
    """:class:`McpDomain` whose tasks are synthesised from ``server``'s tools (never our
    servers' tasks); its ``scripted`` and ``random`` policies play them as explorers.

    Args:
        server: The operator's command line of the server.
        timeout_s: Seconds the server may take to start and list its tools (at least 20).
    """

    def __init__(self, server: str, timeout_s: float = 20.0) -> None:
        self.server, self.timeout_s = server, timeout_s

    def tasks(self) -> ExplorerTaskSampler:
        """Tasks from the server's own tool list."""
        return ExplorerTaskSampler(self.server, self.timeout_s)
