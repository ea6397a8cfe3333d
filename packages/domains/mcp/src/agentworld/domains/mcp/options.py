"""``McpEnvOptions``: what ``agentworld collect --domain mcp --set KEY=VALUE`` may give
:class:`~agentworld.domains.mcp.env.McpEnv` (:mod:`agentworld.core.options`)."""

from __future__ import annotations

from agentworld.core.options import EnvOptions, Field


class McpEnvOptions(EnvOptions):
    """Options of the mcp domain's real environment.

    Attributes:
        server: ``notes``, ``records``, ``todo`` or a stdio server's command line
            (``"uvx mcp-server-time"``); default: each task's own server.
        timeout_s: Seconds a server may take to start or answer, > 0.
        max_steps: Tool calls before the episode is truncated.
    """

    server: str | None = Field(None, pattern=r"\S")
    timeout_s: float = Field(10.0, gt=0)
    max_steps: int = Field(50, ge=1)
