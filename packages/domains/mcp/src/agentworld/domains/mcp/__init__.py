"""agentworld mcp domain: real MCP servers over stdio through the official SDK.

``agentworld/mcp-v0`` is registered with Gymnasium on import when Gymnasium is already
imported (``import gymnasium; import agentworld.domains.mcp``, or
``gymnasium.make("agentworld.domains.mcp:agentworld/mcp-v0")``); otherwise the package stays
light, since every server process imports it (Gymnasium and NumPy take about a second).
"""

import sys

if "gymnasium" in sys.modules:
    from agentworld.domains.mcp.registration import register_envs

    register_envs()
