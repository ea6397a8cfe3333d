"""Gymnasium registration of the real MCP environment: ``gymnasium.make("agentworld/mcp-v0")``.

Registered when the plugin module is imported (listing agentworld's plugins imports it) or
:mod:`agentworld.domains.mcp.env` is; the package itself stays light, since every server
process imports it. Each ``reset`` without a task draws one from the task sampler.
"""

from __future__ import annotations

from typing import Any

import gymnasium

ENV_ID = "agentworld/mcp-v0"


def make_env(**kwargs: Any) -> Any:
    """A :class:`~agentworld.domains.mcp.env.McpEnv` drawing tasks from
    :class:`~agentworld.domains.mcp.tasks.McpTaskSampler` unless ``tasks`` is given
    (``tasks=None`` turns it off)."""
    from agentworld.domains.mcp.env import McpEnv
    from agentworld.domains.mcp.tasks import McpTaskSampler

    kwargs.setdefault("tasks", McpTaskSampler())
    return McpEnv(**kwargs)


def register_envs() -> None:
    """Register :data:`ENV_ID` with Gymnasium (once; no environment is made)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point=make_env)
