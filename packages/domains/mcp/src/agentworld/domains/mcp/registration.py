"""Gymnasium registration of the real MCP environment: ``gymnasium.make("agentworld/mcp-v0")``.

Registered when the plugin module is imported (listing agentworld's plugins imports it) or
:mod:`agentworld.domains.mcp.env` is; the package itself stays light, since every server
process imports it. Each ``reset`` without a task draws one from the task sampler.
"""

from __future__ import annotations

import gymnasium

ENV_ID = "agentworld/mcp-v0"
#: Gymnasium imports the factory when the env is made (:func:`agentworld.domains.mcp.env.make_env`),
#: so registering needs neither the env module nor its MCP client.
ENTRY_POINT = "agentworld.domains.mcp.env:make_env"


def register_envs() -> None:
    """Register :data:`ENV_ID` with Gymnasium (once; no environment is made)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point=ENTRY_POINT)
