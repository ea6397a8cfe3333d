"""MCP over the served env: JSON-RPC 2.0 ``initialize``, ``ping``, ``tools/list`` and
``tools/call`` (``POST /mcp``, and ``{"type": "mcp", "data": ...}`` messages on ``/ws``).

``POST /mcp`` is a Streamable HTTP MCP endpoint as far as a tools client needs one, so the
official SDK's client connects to it (``mcp.client.streamable_http``, then ``ClientSession``):
``initialize`` answers the protocol version the client asked for when it is one of
:data:`PROTOCOL_VERSIONS` (else the latest), the ``tools`` capability and the server's name;
a notification (``notifications/initialized``, ``notifications/cancelled``, no ``id``) gets
HTTP 202 with no body (:func:`handle_mcp` returns ``None``); replies are
``application/json``; the optional GET stream is not offered (405), which the protocol
allows.

The tools are the env's own calls: ``reset`` (``seed``, ``episode_id``, ``task_id``),
``step`` (``text``: the action; an ``enum`` of the domain's action words when it has a
small discrete action set) and ``state``. A call names its HTTP session with
``session_id`` (from ``POST /sessions`` or the ``openenv/session/create`` method); on
``/ws`` it acts on the connection's own session; without either, ``reset`` and ``step``
run on a fresh env that is closed after the call (as the stateless ``/reset`` and
``/step`` do). ``tools/call`` answers an MCP ``CallToolResult``: ``content`` (the
observation text), ``structuredContent`` and ``data`` (both the serialised observation
or state; ``data`` is what OpenEnv's ``MCPToolClient.call_tool`` returns) and ``isError``.
OpenEnv's session methods ``openenv/session/create`` (-> ``{"session_id"}``) and
``openenv/session/close`` (``{"session_id"}``) open and close HTTP sessions, so
``MCPToolClient`` (which attaches its WebSocket to that session) works as it is.

Sources: JSON-RPC 2.0 (https://www.jsonrpc.org/specification), MCP lifecycle and
Streamable HTTP transport
(https://modelcontextprotocol.io/specification/2025-06-18/basic/lifecycle,
.../basic/transports), MCP tools
(https://modelcontextprotocol.io/specification/2025-06-18/server/tools), OpenEnv's
``openenv.core.env_server.mcp_types`` (openenv 0.10).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentworld.sim.openenv.models import MAX_ACTION_CHARS
from fastapi import HTTPException
from openenv.core.env_server.mcp_types import (
    JsonRpcErrorCode,
    JsonRpcRequest,
    JsonRpcResponse,
    McpMethod,
)
from pydantic import ValidationError

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""MCP protocol revisions ``initialize`` accepts; the last is answered to any other."""

# (tool name, arguments without session_id, session_id or None) -> structured result
CallTool = Callable[[str, dict[str, Any], str | None], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class McpBackend:
    """What ``/mcp`` needs from the app: run a tool, open and close HTTP sessions (all
    raising :class:`fastapi.HTTPException` as the HTTP routes do), the domain's actions."""

    call_tool: CallTool
    create_session: Callable[[str | None], Awaitable[str]]  # client address -> session id
    close_session: Callable[[str], Awaitable[None]]
    actions: Sequence[str] | None = None
    name: str = "agentworld"


def tool_specs(actions: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """MCP tool specs (``name``, ``description``, ``inputSchema``) of the served env;
    ``actions``: the domain's discrete action words, offered as the ``step`` text's enum."""
    session = {"type": "string", "description": "HTTP session id (POST /sessions)"}
    text: dict[str, Any] = {
        "type": "string",
        "maxLength": MAX_ACTION_CHARS,
        "description": "The action text (for the terminal: a shell command line)",
    }
    if actions:
        text["enum"] = list(actions)
    return [
        {
            "name": "reset",
            "description": "Start an episode; the server picks the task by seed or task_id.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "seed": {"type": "integer", "minimum": 0},
                    "episode_id": {"type": "string", "maxLength": 255},
                    "task_id": {"type": "string"},
                    "session_id": session,
                },
                "additionalProperties": False,
            },
        },
        {
            "name": "step",
            "description": "Take one action; returns the observation, reward and done.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": text, "session_id": session},
                "required": ["text"],
                "additionalProperties": False,
            },
        },
        {
            "name": "state",
            "description": "The session's episode id, step count and done flag.",
            "inputSchema": {
                "type": "object",
                "properties": {"session_id": session},
                "additionalProperties": False,
            },
        },
    ]


async def handle_mcp(
    payload: Any,
    backend: McpBackend,
    session_id: str | None = None,
    client: str | None = None,
) -> dict[str, Any] | None:
    """The JSON-RPC response (a dict) to one request ``payload`` (parsed JSON); ``None`` for a
    notification (a ``notifications/...`` message without ``id``), which gets no response.

    ``session_id`` binds tool calls to a WebSocket's own session; ``client`` (an address)
    is charged for sessions opened by ``openenv/session/create``. Errors raised by the
    backend become JSON-RPC errors: invalid params (-32602) for 4xx, server error (-32000)
    for 5xx.
    """
    if isinstance(payload, dict) and "id" not in payload and \
            str(payload.get("method", "")).startswith("notifications/"):
        return None
    try:
        request = JsonRpcRequest.model_validate(payload)
    except ValidationError as error:
        message = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        return _error(JsonRpcErrorCode.INVALID_REQUEST, f"invalid JSON-RPC request: {message}")
    rid, params = request.id, request.params
    try:
        if request.method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
            result = {"protocolVersion": version, "capabilities": {"tools": {}},
                      "serverInfo": {"name": backend.name, "version": _version()}}
            return JsonRpcResponse.success(result, rid).model_dump()
        if request.method == "ping":
            return JsonRpcResponse.success({}, rid).model_dump()
        if request.method == McpMethod.TOOLS_LIST:
            return JsonRpcResponse.success({"tools": tool_specs(backend.actions)}, rid).model_dump()
        if request.method == "openenv/session/create":
            result = {"session_id": session_id or await backend.create_session(client)}
            return JsonRpcResponse.success(result, rid).model_dump()
        if request.method == "openenv/session/close":
            target = params.get("session_id")
            if not isinstance(target, str) or target == session_id:
                message = "openenv/session/close needs the 'session_id' of an HTTP session"
                return _error(JsonRpcErrorCode.INVALID_PARAMS, message, rid)
            await backend.close_session(target)
            return JsonRpcResponse.success({"session_id": target, "closed": True}, rid).model_dump()
        if request.method != McpMethod.TOOLS_CALL:
            valid = ("initialize, ping, tools/list, tools/call, openenv/session/create, "
                     "openenv/session/close")
            message = f"unknown method {request.method!r}; valid: {valid}"
            return _error(JsonRpcErrorCode.METHOD_NOT_FOUND, message, rid)
        name, arguments = params.get("name"), params.get("arguments") or {}
        names = [tool["name"] for tool in tool_specs()]
        if name not in names or not isinstance(arguments, dict):
            return _error(
                JsonRpcErrorCode.INVALID_PARAMS,
                f"tools/call needs a 'name' in {names} and an 'arguments' object, got {name!r}",
                rid,
            )
        arguments = dict(arguments)
        target = arguments.pop("session_id", None) or params.get("session_id")
        result = await backend.call_tool(name, arguments, session_id or target)
    except HTTPException as error:
        code = JsonRpcErrorCode.INVALID_PARAMS if error.status_code < 500 else None
        return _error(code or JsonRpcErrorCode.SERVER_ERROR, str(error.detail), rid)
    text = result.get("observation", {}).get("text") if "observation" in result else None
    content = [{"type": "text", "text": text if text is not None else json.dumps(result)}]
    call_result = {"content": content, "structuredContent": result, "data": result}
    return JsonRpcResponse.success({**call_result, "isError": False}, rid).model_dump()


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("agentworld-sim")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source checkout
        return "0"


def _error(code: JsonRpcErrorCode, message: str, rid: str | int | None = None) -> dict[str, Any]:
    return JsonRpcResponse.error_response(code, message, request_id=rid).model_dump()
