"""``POST /mcp`` and ``DELETE /mcp``: MCP Streamable HTTP with sessions (``Mcp-Session-Id``).

As the MCP transport specification has it (2025-06-18, "Session Management"): a successful
``initialize`` request opens an HTTP session of the server (one env, counted against the
session limits like ``POST /sessions``) and its response carries the session's id in the
``Mcp-Session-Id`` header. Every later request carrying that header runs on that session:
``tools/call`` ``reset`` and ``step`` act on the same env, so the shell's directory and
variables persist from call to call. ``DELETE /mcp`` with the header closes the session;
so does idleness (no reset or step for the server's idle timeout; see
:mod:`.sessions`). A request naming a session that is closed or unknown gets HTTP 404 with a
JSON-RPC error, upon which a client starts a new session with a new ``initialize``.

Requests without the header (raw JSON-RPC, ``openenv validate``, OpenEnv's ``MCPToolClient``)
are served as before: a ``tools/call`` acts on the HTTP session its ``session_id`` argument
names, or on a fresh env closed after the call.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld.sim.openenv.mcp import McpBackend, handle_mcp
from agentworld.sim.openenv.sessions import SessionKind, SessionManager, UnknownSessionError
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from openenv.core.env_server.mcp_types import JsonRpcErrorCode, JsonRpcResponse

MCP_SESSION_HEADER = "Mcp-Session-Id"


def _is_initialize(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("method") == "initialize" and "id" in payload


def add_mcp_routes(app: FastAPI, backend: McpBackend, sessions: SessionManager) -> None:
    """Add ``POST /mcp`` and ``DELETE /mcp`` (see the module docstring) to ``app``.

    ``backend.create_session(client)`` opens the session of an ``initialize`` and raises
    :class:`fastapi.HTTPException` (429, 503) when no slot is free, which the client gets
    as that HTTP status.
    """

    def unknown(session_id: str, rid: Any = None) -> JSONResponse:
        message = (
            f"unknown MCP session {session_id!r} (closed, idle past the server's timeout, or "
            "never opened): send initialize without Mcp-Session-Id to start a new one"
        )
        body = JsonRpcResponse.error_response(
            JsonRpcErrorCode.INVALID_REQUEST, message, request_id=rid
        ).model_dump()
        return JSONResponse(body, 404)

    def mcp_session(session_id: str) -> bool:
        try:
            return sessions.get(session_id).kind is SessionKind.HTTP
        except UnknownSessionError:
            return False

    @app.post("/mcp", response_model=None)
    async def mcp(request: Request) -> dict[str, Any] | Response:
        try:
            payload = json.loads(await request.body())
        except ValueError as error:
            reply = JsonRpcResponse.error_response(JsonRpcErrorCode.PARSE_ERROR, f"{error}")
            return reply.model_dump()
        client = request.client.host if request.client else None
        session_id = request.headers.get(MCP_SESSION_HEADER)
        if session_id is not None:
            if not mcp_session(session_id):
                return unknown(session_id, payload.get("id") if isinstance(payload, dict) else None)
            reply = await handle_mcp(payload, backend, session_id=session_id, client=client)
            return Response(status_code=202) if reply is None else reply
        if _is_initialize(payload):
            session_id = await backend.create_session(client)
            reply = await handle_mcp(payload, backend, session_id=session_id, client=client)
            if reply is None or "result" not in reply:  # a refused initialize opens nothing
                await sessions.close(session_id)
                return reply or Response(status_code=202)
            return JSONResponse(reply, headers={MCP_SESSION_HEADER: session_id})
        reply = await handle_mcp(payload, backend, client=client)
        return Response(status_code=202) if reply is None else reply

    @app.delete("/mcp", response_model=None)
    async def end_mcp_session(request: Request) -> dict[str, Any] | Response:
        session_id = request.headers.get(MCP_SESSION_HEADER)
        if session_id is None:
            detail = f"DELETE /mcp needs the {MCP_SESSION_HEADER} header of the session to end"
            return JSONResponse({"detail": detail}, 400)
        if not mcp_session(session_id):
            return unknown(session_id)
        await sessions.close(session_id)
        return {"session_id": session_id, "closed": True}
