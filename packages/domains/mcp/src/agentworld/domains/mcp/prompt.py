"""The world-model system prompt of an MCP server: its role, the tool definitions from the
real server's ``list_tools`` and the set-up calls that prepared its state.

Written for this project after the role of the public ``prompts/mcp/system_prompt.txt`` of
QwenLM/Qwen-AgentWorld (simulate the tool environment given the available tools' JSON
schemas); AgentWorldBench rows bring their own ``system_str``.
"""

from __future__ import annotations

import functools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from agentworld.core.types import Task
from agentworld.domains.mcp import catalog
from agentworld.domains.mcp.calls import definitions, render_call
from agentworld.domains.mcp.client import ServerConnection

ROLE = """You are simulating an MCP (Model Context Protocol) tool server{name}. Each user message is one tool call
as JSON, {{"name": TOOL, "arguments": {{...}}}}. Reply with the tool's raw response exactly as the server
returns it: the JSON text of a structured result, or the text of an error result (a failing tool:
`Error executing tool NAME: MESSAGE`; an unknown tool: `Unknown tool: NAME`; a call that is not a JSON
tool call: a one-line `Error: ...`). State persists across the calls of an episode."""


@functools.cache
def tool_definitions(server: str, timeout_s: float = 20.0) -> tuple[dict[str, Any], ...]:
    """The tools of one of our servers (or a server command line) as ``list_tools`` gives them
    (wire form), from a real server started once per process in a private directory.

    Raises:
        ServerError: the server does not start.
    """
    root = Path(tempfile.mkdtemp(prefix="agentworld-mcp-tools-"))
    conn = ServerConnection(catalog.command(server, root / "data"), root, timeout_s)
    try:
        return tuple(conn.start())
    finally:
        conn.close()
        shutil.rmtree(root, ignore_errors=True)


def system_prompt(task: Task | None, server: str | None = None) -> str:
    """The system prompt for ``task`` (its ``setup["server"]``, or ``server``); without either,
    the role alone."""
    setup = task.setup if task is not None else {}
    name = server or setup.get("server")
    if name is None:
        return ROLE.format(name="")
    parts = [ROLE.format(name=f" named {catalog.label(name)!r}"),
             f"Available tools:\n{definitions(list(tool_definitions(name)))}"]
    calls = setup.get("calls") or []
    if calls:
        lines = "\n".join(render_call(c["name"], c.get("arguments", {})) for c in calls)
        parts.append(f"Before the episode the server's state was set up with these calls:\n{lines}")
    return "\n\n".join(parts)


def tools_json(server: str) -> str:
    """The tool definitions of ``server`` as compact JSON (for ``agentworld domains``)."""
    return json.dumps([t["name"] for t in tool_definitions(server)])
