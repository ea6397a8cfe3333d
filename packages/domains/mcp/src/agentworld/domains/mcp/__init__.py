"""agentworld mcp domain: real MCP servers over stdio through the official SDK."""
