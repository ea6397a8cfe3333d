"""The world-model system prompt of an MCP server: its role, the tool definitions from the
real server's ``list_tools`` and the set-up calls that prepared its state.

Written for this project after the role of the public ``prompts/mcp/system_prompt.txt`` of
QwenLM/Qwen-AgentWorld (simulate the tool environment given the available tools' JSON
schemas); AgentWorldBench rows bring their own ``system_str``.

Tool definitions never come from a server that data names (:mod:`agentworld.domains.mcp.catalog`):
a task's recorded ``setup["tools"]``, else the ``list_tools`` of one of our servers or of a
command line the operator configured; a task naming any other server gets the role without
tools.
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
    """The tools of one of our servers (or a command line the operator configured,
    :func:`agentworld.domains.mcp.catalog.trust`) as ``list_tools`` gives them (wire form),
    from a real server started once per process in a private directory.

    Raises:
        ServerError: the server does not start.
        UntrustedServerError: ``server`` is neither ours nor configured (nothing is started).
    """
    root = Path(tempfile.mkdtemp(prefix="agentworld-mcp-tools-"))
    try:
        conn = ServerConnection(catalog.command(server, root / "data"), root, timeout_s)
        try:
            return tuple(conn.start())
        finally:
            conn.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def recorded_tools(task: Task | None) -> list[dict[str, Any]] | None:
    """The tool definitions ``task`` records (``setup["tools"]``: wire-form objects with a
    string ``name``), ``None`` when it records none.

    Raises:
        ValueError: ``setup["tools"]`` is there but no such list (naming the task).
    """
    tools = task.setup.get("tools") if task is not None else None
    if tools is None:
        return None
    if not isinstance(tools, list) or not all(
            isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools):
        raise ValueError(f"mcp task {task.id!r}: setup['tools'] must be a list of tool "  # type: ignore[union-attr]
                         f"definitions {{\"name\": str, \"inputSchema\": {{...}}}}, got {tools!r:.80}")
    return tools


def known_tools(task: Task | None, server: str | None = None) -> list[dict[str, Any]] | None:
    """The tools of ``task``'s server (or ``server``) without starting anything data names:
    the task's :func:`recorded_tools`, else :func:`tool_definitions` of one of our servers or
    of a configured command line; ``None`` for any other server (a tool list is unknown).

    Raises:
        ServerError: one of ours or a configured server does not start.
        ValueError: as :func:`recorded_tools`.
    """
    recorded = recorded_tools(task)
    if recorded is not None:
        return recorded
    name = server or (task.setup.get("server") if task is not None else None)
    if isinstance(name, str) and catalog.runnable(name):
        return list(tool_definitions(name))
    return None


def system_prompt(task: Task | None, server: str | None = None) -> str:
    """The system prompt for ``task`` (its ``setup["server"]``, or ``server``); without either,
    the role alone. The tools are :func:`known_tools`; when none are known (a server that
    data names), the prompt has no tool list.

    Raises:
        ValueError: as :func:`recorded_tools`.
    """
    setup = task.setup if task is not None else {}
    name = server or setup.get("server")
    if not isinstance(name, str) or not name:
        return ROLE.format(name="")
    parts = [ROLE.format(name=f" named {catalog.label(name)!r}")]
    tools = known_tools(task, name)
    if tools is not None:
        parts.append(f"Available tools:\n{definitions(tools)}")
    calls = setup.get("calls") or []
    if calls:
        lines = "\n".join(render_call(c["name"], c.get("arguments", {})) for c in calls)
        parts.append(f"Before the episode the server's state was set up with these calls:\n{lines}")
    return "\n\n".join(parts)


def tools_json(server: str) -> str:
    """The tool definitions of ``server`` as compact JSON (for ``agentworld domains``)."""
    return json.dumps([t["name"] for t in tool_definitions(server)])
