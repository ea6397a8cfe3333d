"""The official ``mcp`` SDK's high-level server for our servers, under either major version.

SDK 1.x calls it ``mcp.server.fastmcp.FastMCP``; 2.x renamed it ``mcp.server.mcpserver.MCPServer``
(migration guide, ``docs/migration.md`` of modelcontextprotocol/python-sdk). Both turn a tool's
exception into an ``isError`` result whose text is ``Error executing tool NAME: MESSAGE`` and an
unknown tool into ``Unknown tool: NAME``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:  # SDK 2.x
    from mcp.server.mcpserver import MCPServer as Server  # type: ignore[import-not-found]
except ModuleNotFoundError:  # SDK 1.x
    from mcp.server.fastmcp import FastMCP as Server


def data_dir(prog: str) -> Path:
    """The ``--data DIR`` argument of a server's command line (created when missing).

    Raises:
        SystemExit: ``--data`` is missing (argparse prints the usage).
    """
    parser = argparse.ArgumentParser(prog=prog, description=f"the {prog} MCP server over stdio")
    parser.add_argument("--data", required=True, help="directory holding the server's state")
    path = Path(parser.parse_args().data)
    path.mkdir(parents=True, exist_ok=True)
    return path


def serve(name: str, tools: list[Callable[..., Any]]) -> None:
    """Serve ``tools`` (typed functions: their signatures become the JSON schemas, their
    docstrings the descriptions) as MCP server ``name`` over stdio until stdin closes."""
    server = Server(name)
    for tool in tools:
        server.tool()(tool)
    server.run()
