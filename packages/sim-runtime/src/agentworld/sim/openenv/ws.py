"""The OpenEnv WebSocket session (``/ws``): one env per connection, one reply per message.

Messages and replies as in ``openenv.core.env_server.http_server`` (openenv 0.10); see
``app.py`` for the list. A bad message gets an ``error`` reply and the session goes on.
A client over its WebSocket sessions (``SessionManager.max_ws_per_client``) is refused with
close code 1008 and a reason; a connection whose session takes no action (a reset or a step)
for the manager's ``idle_timeout_s`` is closed (code 1001, reason ``idle for N s ...``) and
its session closed: ``state`` messages and other keep-alives do not keep it open. A session
the manager reclaims (fair share) is closed with code 1001 and the reason.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from typing import Any

from agentworld.sim.openenv.envs import EpisodeOverError
from agentworld.sim.openenv.mcp import McpBackend, handle_mcp
from agentworld.sim.openenv.models import EpisodeState, TextAction
from agentworld.sim.openenv.sessions import (
    ClientLimitError,
    Session,
    SessionKind,
    SessionLimitError,
    SessionManager,
    UnknownSessionError,
)
from agentworld.sim.openenv.tasks import MAX_SEED, TaskPool
from fastapi import WebSocket, WebSocketDisconnect
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import ResetRequest, WSErrorCode
from pydantic import ValidationError

RESET_FIELDS = {"seed", "episode_id", "task_id"}


def reset_arguments(data: dict[str, Any], tasks: TaskPool | None) -> dict[str, Any]:
    """``ServedEnv.reset`` keyword arguments from a reset payload (``seed`` in
    ``[0, 2**63)``, ``episode_id``, ``task_id``).

    The task is picked on the server (see :mod:`.tasks`): by ``task_id`` or ``seed`` from
    ``tasks``; with ``tasks=None`` the server runs free play and a ``task_id`` is refused.

    Raises:
        ValueError: An unknown field (a client-defined ``task`` among them), or an invalid
            ``seed``, ``episode_id`` or ``task_id``.
    """
    if "task" in data:
        raise ValueError(
            "a client cannot define a task (its check would run on the server); "
            "send seed or task_id and the server picks the task"
        )
    unknown = set(data) - RESET_FIELDS
    if unknown:
        raise ValueError(f"unknown reset fields {sorted(unknown)}; valid: {sorted(RESET_FIELDS)}")
    request = ResetRequest.model_validate({k: v for k, v in data.items() if k != "task_id"})
    if request.seed is not None and request.seed > MAX_SEED:
        raise ValueError(f"seed must be at most 2**63 - 1, got {request.seed}")
    task_id = data.get("task_id")
    if task_id is not None and not isinstance(task_id, str):
        raise ValueError(f"task_id must be a string, got {type(task_id).__name__}")
    if tasks is None:
        if task_id is not None:
            raise ValueError("this server serves free play (no tasks): leave out task_id")
        task = None
    else:
        task = tasks.pick(request.seed, task_id)
    return {"seed": request.seed, "episode_id": request.episode_id, "task": task}


def validation_message(error: ValidationError) -> str:
    """``loc: msg`` of each pydantic error, joined by ``; ``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in error.errors()
    )


async def run_websocket_session(
    websocket: WebSocket,
    sessions: SessionManager,
    max_message_bytes: int,
    tasks: TaskPool | None = None,
    mcp: McpBackend | None = None,
) -> None:
    """Serve one WebSocket connection until the client closes it, sends ``close`` or sends
    nothing for ``sessions.idle_timeout_s`` seconds (then closed with code 1001).

    A connection beyond ``sessions.max_sessions`` is answered ``CAPACITY_REACHED`` and closed
    (code 1013); one beyond ``sessions.max_ws_per_client`` for its client identity is answered
    ``CLIENT_LIMIT`` and closed (code 1008, the reason names the limit); a message over
    ``max_message_bytes`` (bytes) gets ``PAYLOAD_TOO_LARGE``.
    ``tasks`` picks the task of a reset; ``mcp`` answers ``mcp`` messages on this
    connection's session. With ``?session_id=ID`` the connection drives the open HTTP
    session ``ID`` (as OpenEnv's ``MCPToolClient`` does) and leaves it open when it ends.
    """
    await websocket.accept()
    attach = websocket.query_params.get("session_id")
    client = websocket.client.host if websocket.client else None
    try:
        if attach is not None:
            session = sessions.get(attach)
        else:
            session = await sessions.open(SessionKind.WEBSOCKET, client)
    except UnknownSessionError as error:
        await _refuse(websocket, _error(str(error), WSErrorCode.SESSION_ERROR), 1008)
        return
    except ClientLimitError as error:
        reason = f"client limit: {sessions.max_ws_per_client} WebSocket sessions per client"
        if sessions.max_ws_per_client is None:  # the HTTP limits (never for /ws)
            reason = "client limit"
        await _refuse(websocket, _error(str(error), "CLIENT_LIMIT"), 1008, reason)
        return
    except SessionLimitError as error:
        await _refuse(websocket, _error(str(error), WSErrorCode.CAPACITY_REACHED), 1013)
        return
    except Exception as error:  # noqa: BLE001 -- the env could not be made
        reply = _error(f"env creation failed: {error}", WSErrorCode.FACTORY_ERROR)
        await _refuse(websocket, reply, 1011)
        return
    code, reason, idle_s = 1000, "", sessions.idle_timeout_s
    reclaimed = False

    async def close_reclaimed(why: str) -> None:
        nonlocal reclaimed
        reclaimed = True
        await _close(websocket, 1001, why)

    if attach is None:
        session.on_reclaim = close_reclaimed
    try:
        while not reclaimed:
            left = None if idle_s is None else idle_s - (time.monotonic() - session.last_action_s)
            if left is not None and left <= 0:
                code, reason = 1001, f"idle for {idle_s:g} s: no reset or step (idle timeout)"
                break
            try:
                message = await asyncio.wait_for(websocket.receive(), left)
            except TimeoutError:
                continue  # a step may have started meanwhile: look at the clock again
            if message["type"] == "websocket.disconnect":
                break
            raw = message.get("text") or (message.get("bytes") or b"").decode("utf-8", "replace")
            if len(raw.encode()) > max_message_bytes:
                reply = _error(
                    f"message of {len(raw.encode())} bytes exceeds the limit of {max_message_bytes}",
                    "PAYLOAD_TOO_LARGE",
                )
            else:
                reply = await _handle(session, raw, tasks, mcp)
            if reply is None:
                break
            await websocket.send_text(reply)
    except WebSocketDisconnect:
        pass
    except RuntimeError:
        if not reclaimed:  # after a reclaim the socket is closed: nothing more to send
            raise
    finally:
        if attach is None:
            await sessions.close(session.id)
        if not reclaimed:
            await _close(websocket, code, reason)


async def _refuse(websocket: WebSocket, reply: str, code: int, reason: str = "") -> None:
    """Answer the first message (waited for up to 10 s, so that clients that send before they
    read see the reason) with ``reply``, then close with ``code`` and ``reason``."""
    try:
        await asyncio.wait_for(websocket.receive(), timeout=10.0)
        await websocket.send_text(reply)
    except (TimeoutError, WebSocketDisconnect, RuntimeError):
        pass
    await _close(websocket, code, reason)


async def _close(websocket: WebSocket, code: int = 1000, reason: str = "") -> None:
    try:
        await websocket.close(code=code, reason=reason[:120])  # a close frame holds 123 bytes
    except (RuntimeError, WebSocketDisconnect):
        pass  # already closed by the client


def _error(message: str, code: WSErrorCode | str) -> str:
    code = code.value if isinstance(code, WSErrorCode) else code
    return json.dumps({"type": "error", "data": {"message": message, "code": code}})


async def _handle(
    session: Session,
    raw: str,
    tasks: TaskPool | None,
    mcp: McpBackend | None,
) -> str | None:
    """The reply to one WebSocket message (``None`` for ``close``)."""
    env = session.env
    assert env is not None
    try:
        message = json.loads(raw)
    except json.JSONDecodeError as error:
        return _error(f"invalid JSON: {error}", WSErrorCode.INVALID_JSON)
    if not isinstance(message, dict):
        return _error("a message is a JSON object with a 'type'", WSErrorCode.INVALID_JSON)
    kind, data = message.get("type"), message.get("data") or {}
    try:  # validate first: an error raised by the env itself is no malformed message
        if kind == "reset":
            call = functools.partial(env.reset, **reset_arguments(dict(data), tasks))
            session.touch()
        elif kind == "step":
            call = functools.partial(env.step, TextAction.model_validate(data).text)
            session.touch()
        elif kind == "state":
            call = functools.partial(env.state, session.id)
        elif kind == "close":
            return None
        elif kind == "mcp" and mcp is not None:
            reply = await handle_mcp(data, mcp, session_id=session.id)
            return json.dumps({"type": "mcp", "data": reply})  # a notification: data null
        else:
            return _error(
                f"unknown message type {kind!r}; valid: reset, step, state, mcp, close",
                WSErrorCode.UNKNOWN_TYPE,
            )
    except ValidationError as error:
        return _error(
            f"malformed {kind}: {validation_message(error)}", WSErrorCode.VALIDATION_ERROR
        )
    except (ValueError, TypeError) as error:
        return _error(f"malformed {kind}: {error}", WSErrorCode.VALIDATION_ERROR)
    try:
        result = await session.run(call)
    except Exception as error:  # noqa: BLE001 -- an env failure ends no other session
        name = "" if isinstance(error, EpisodeOverError) else f"{type(error).__name__}: "
        return _error(f"{name}{error}", WSErrorCode.EXECUTION_ERROR)
    if isinstance(result, EpisodeState):
        return json.dumps({"type": "state", "data": result.model_dump()})
    return json.dumps({"type": "observation", "data": serialize_observation(result)})
