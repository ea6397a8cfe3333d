"""A stdio MCP server (official SDK) with tools that hang or kill the server, for the restart
tests of the mcp domain: ``python mcp_faulty_server.py``."""

import os
import time

try:
    from mcp.server.mcpserver import MCPServer as Server
except ModuleNotFoundError:
    from mcp.server.fastmcp import FastMCP as Server

server = Server("faulty")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def hang(seconds: float) -> str:
    """Sleep, blocking the server."""
    time.sleep(seconds)
    return "woke"


@server.tool()
def crash() -> str:
    """Kill the server process."""
    os._exit(3)


if __name__ == "__main__":
    server.run()
