"""The OpenEnv-protocol server app (FastAPI): HTTP, WebSocket and MCP routes over sessions.

Routes (payloads as in ``openenv.core.env_server.http_server``, openenv 0.10):

- ``GET /health`` -> ``{"status": "healthy"}``; ``GET /schema`` (``action``,
  ``observation``, ``reset_observation``, ``state``), ``GET /metadata``; ``GET /tasks``:
  the tasks a reset may name by ``task_id``.
- ``WS /ws``: one session per connection (``/ws?session_id=ID`` attaches to the HTTP
  session ``ID`` instead, which outlives the connection; ``/ws?token=KEY`` carries the API
  key for clients that cannot set headers). Client messages ``{"type": "reset", "data":
  {seed?, episode_id?, task_id?}}``, ``{"type": "step", "data": {"text": ...}}``, ``{"type":
  "state"}``, ``{"type": "mcp", "data": JSON-RPC}``, ``{"type": "close"}``; replies ``{"type":
  "observation", "data": {"observation": {"text", "metadata"}, "reward", "done",
  "metadata"}}``, ``{"type": "state", "data": {...}}``, ``{"type": "mcp", "data": ...}`` or
  ``{"type": "error", "data": {"message", "code"}}``. A bad message gets an error reply and
  the session goes on; a connection beyond ``max_sessions`` gets ``CAPACITY_REACHED``, one
  beyond ``max_ws_per_client`` of its client gets ``CLIENT_LIMIT`` (close code 1008), and a
  connection with no reset or step for ``idle_timeout_s`` is closed (code 1001) with its
  session (limits and fair share: :mod:`.sessions`).
- ``POST /reset``, ``POST /step``, ``GET /state``: stateless as OpenEnv defines them (a fresh
  env per request; ``/step`` resets it first) unless ``session_id`` names an HTTP session made
  by ``POST /sessions`` (closed by ``DELETE /sessions/{id}``); ``GET /sessions`` counts them.
- ``POST /mcp``, ``DELETE /mcp``: MCP over Streamable HTTP (``initialize``, ``tools/list``,
  ``tools/call``; the official SDK's client connects), one env per ``Mcp-Session-Id`` (see
  :mod:`.mcp_http`), and OpenEnv's session methods (see :mod:`.mcp`).

A reset never carries a task: the server picks it (see :mod:`.tasks`). With ``api_key``
every route but ``/health`` needs ``Authorization: Bearer KEY`` (a WebSocket may send
``?token=KEY`` instead; see :mod:`agentworld.sim.server.auth`). Browser pages of other sites
are refused (:mod:`agentworld.sim.server.browser`): an ``Origin`` other than the server's
own or ``allowed_origins`` gets 403, a ``POST`` that is not ``application/json`` 415.
When the app shuts down (SIGTERM, Ctrl-C, the end of a
:class:`~agentworld.sim.server.ServerThread`), every session's env is closed.

HTTP errors are ``{"detail": message}``: 401 no key, 403 a foreign ``Origin`` or ``Host``,
404 unknown session, 409 step with no running episode, 413 body over ``max_body_bytes``,
415 a ``POST`` body that is not JSON, 422 malformed request or action, 429 a client over
its HTTP sessions, 503 at capacity.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from agentworld.sim.openenv.envs import EpisodeOverError, ServedEnv
from agentworld.sim.openenv.mcp import McpBackend
from agentworld.sim.openenv.mcp_http import add_mcp_routes
from agentworld.sim.openenv.models import EpisodeState, TextAction, TextObservation
from agentworld.sim.openenv.sessions import (
    ClientLimitError,
    Session,
    SessionKind,
    SessionLimitError,
    SessionManager,
    UnknownSessionError,
)
from agentworld.sim.openenv.tasks import TaskPool
from agentworld.sim.openenv.ws import reset_arguments, run_websocket_session, validation_message
from agentworld.sim.server.auth import BearerAuthMiddleware
from agentworld.sim.server.browser import BrowserGuardMiddleware, normalize_origin
from agentworld.sim.server.limits import BodyLimitMiddleware
from fastapi import FastAPI, HTTPException, Request, WebSocket
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import (
    EnvironmentMetadata,
    HealthResponse,
    ResetResponse,
    SchemaResponse,
    StepRequest,
    StepResponse,
)
from pydantic import ValidationError

MAX_BODY_BYTES = 64 * 1024


def create_app(
    factory: Callable[[], ServedEnv],
    *,
    name: str,
    description: str = "",
    max_sessions: int = 8,
    max_body_bytes: int = MAX_BODY_BYTES,
    idle_timeout_s: float | None = 600.0,
    tasks: TaskPool | None = None,
    actions: Sequence[str] | None = None,
    api_key: str | None = None,
    max_http_sessions: int | None = None,
    max_sessions_per_client: int | None = None,
    max_ws_per_client: int | None = None,
    allowed_origins: Sequence[str] = (),
) -> FastAPI:
    """An OpenEnv-protocol app serving the envs ``factory`` makes.

    Args:
        factory: Makes one :class:`ServedEnv` per session (see ``envs.SimEnvFactory`` and
            ``envs.RealEnvFactory``); called on the session's own thread.
        name: Environment name reported by ``/metadata``.
        description: Description reported by ``/metadata``.
        max_sessions: Most sessions open at once (WebSocket, HTTP and one-shot together).
        max_body_bytes: Largest HTTP body or WebSocket message accepted (bytes).
        idle_timeout_s: Idle HTTP sessions older than this (seconds) are closed when a slot is
            needed, and a WebSocket connection that sends nothing for this long is closed
            with its session; ``None``: never.
        tasks: Where resets get their task (by ``seed`` or ``task_id``); ``None``: free play.
        actions: The domain's discrete action words (the MCP ``step`` tool's enum), if any.
        api_key: When set, every route but ``/health`` needs ``Authorization: Bearer KEY``
            (or, on ``/ws``, ``?token=KEY``).
        max_http_sessions: Most HTTP sessions at once (default: half of ``max_sessions``).
        max_sessions_per_client: Most HTTP sessions of one client identity (every loopback
            address is one; default: no cap but the fair share, see :mod:`.sessions`).
        max_ws_per_client: Most WebSocket sessions of one client identity (default: no cap
            but the fair share).
        allowed_origins: Browser origins (``http(s)://host[:port]``) served besides the
            server's own.

    Returns:
        The FastAPI app; ``app.state.sessions`` is its :class:`SessionManager`.

    Raises:
        ValueError: A limit below 1, or an entry of ``allowed_origins`` that is no origin.
    """
    sessions = SessionManager(
        factory,
        max_sessions,
        idle_timeout_s,
        max_http_sessions=max_http_sessions,
        max_http_per_client=max_sessions_per_client,
        max_ws_per_client=max_ws_per_client,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        sweeper = asyncio.create_task(sessions.sweep_forever())  # idle HTTP and MCP sessions
        try:
            yield
        finally:  # the server stops: no env (sandbox, browser) may outlive it
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            await sessions.close_all()

    app = FastAPI(
        title=f"agentworld OpenEnv server: {name}", description=description, lifespan=lifespan
    )
    app.state.sessions, app.state.max_body_bytes = sessions, max_body_bytes
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)
    if api_key:
        app.add_middleware(BearerAuthMiddleware, api_key=api_key, websocket_query="token")
    origins = tuple(normalize_origin(o) for o in allowed_origins)  # fails here, not at start
    app.add_middleware(BrowserGuardMiddleware, allowed_origins=origins)

    async def open_session(kind: SessionKind, client: str | None = None) -> Session:
        try:
            return await sessions.open(kind, client)
        except ClientLimitError as error:
            raise HTTPException(429, str(error)) from None
        except SessionLimitError as error:
            raise HTTPException(503, str(error)) from None

    def find(session_id: str) -> Session:
        try:
            return sessions.get(session_id)
        except UnknownSessionError as error:
            raise HTTPException(404, str(error)) from None

    async def run(session: Session, call: Callable[[], TextObservation]) -> TextObservation:
        try:
            return await session.run(call)
        except EpisodeOverError as error:
            raise HTTPException(409, str(error)) from None
        except Exception as error:  # noqa: BLE001 -- an env failure ends no other session
            raise HTTPException(500, f"env failed: {type(error).__name__}: {error}") from None

    async def do_reset(body: dict[str, Any], session_id: str | None) -> TextObservation:
        try:
            arguments = reset_arguments(body, tasks)
        except (ValueError, ValidationError) as error:
            detail = validation_message(error) if isinstance(error, ValidationError) else str(error)
            raise HTTPException(422, detail) from None
        if session_id is not None:
            session = find(session_id)
            assert session.env is not None
            session.touch()
            return await run(session, functools.partial(session.env.reset, **arguments))
        session = await open_session(SessionKind.ONE_SHOT)
        try:
            assert session.env is not None
            return await run(session, functools.partial(session.env.reset, **arguments))
        finally:
            await sessions.close(session.id)

    async def do_step(action: TextAction, session_id: str | None) -> TextObservation:
        if session_id is not None:
            session = find(session_id)
            assert session.env is not None
            session.touch()
            return await run(session, functools.partial(session.env.step, action.text))
        session = await open_session(SessionKind.ONE_SHOT)
        env = session.env
        assert env is not None

        def reset_then_step() -> TextObservation:
            env.reset(**reset_arguments({}, tasks))
            return env.step(action.text)

        try:
            return await run(session, reset_then_step)
        finally:
            await sessions.close(session.id)

    async def do_state(session_id: str | None) -> EpisodeState:
        if session_id is None:
            return EpisodeState(domain=name, simulated=bool(getattr(factory, "simulated", False)))
        session = find(session_id)
        assert session.env is not None
        return await session.run(session.env.state, session.id)

    async def call_tool(tool: str, arguments: dict[str, Any], session_id: str | None) -> Any:
        if tool == "reset":
            return serialize_observation(await do_reset(arguments, session_id))
        if tool == "step":
            try:
                action = TextAction.model_validate(arguments)
            except ValidationError as error:
                raise HTTPException(422, f"malformed action: {validation_message(error)}") from None
            return serialize_observation(await do_step(action, session_id))
        if arguments:
            raise HTTPException(422, f"state takes no arguments, got {sorted(arguments)}")
        return (await do_state(session_id)).model_dump()

    @app.get("/health", response_model=HealthResponse)
    async def health() -> HealthResponse:
        return HealthResponse()

    @app.get("/metadata", response_model=EnvironmentMetadata)
    async def metadata() -> EnvironmentMetadata:
        return EnvironmentMetadata(name=name, description=description or name)

    @app.get("/schema", response_model=SchemaResponse)
    async def schema() -> SchemaResponse:
        observation = TextObservation.model_json_schema()
        return SchemaResponse(
            action=TextAction.model_json_schema(),
            observation=observation,
            reset_observation=observation,
            state=EpisodeState.model_json_schema(),
        )

    @app.get("/tasks")
    async def list_tasks() -> dict[str, Any]:
        return {"by_seed": tasks is not None, "tasks": tasks.describe() if tasks else []}

    @app.get("/sessions")
    async def count_sessions() -> dict[str, int]:
        counts = {kind.value: sessions.count(kind) for kind in SessionKind}
        return {"active": sessions.num_sessions, "max": max_sessions, **counts}

    @app.post("/sessions")
    async def create_session(request: Request) -> dict[str, str]:
        client = request.client.host if request.client else None
        return {"session_id": (await open_session(SessionKind.HTTP, client)).id}

    @app.delete("/sessions/{session_id}")
    async def delete_session(session_id: str) -> dict[str, Any]:
        find(session_id)
        await sessions.close(session_id)
        return {"session_id": session_id, "closed": True}

    @app.post("/reset", response_model=ResetResponse)
    async def reset(body: dict[str, Any] | None = None) -> ResetResponse:
        body = dict(body or {})
        observation = await do_reset(body, body.pop("session_id", None))
        return ResetResponse(**serialize_observation(observation))

    @app.post("/step", response_model=StepResponse)
    async def step(body: dict[str, Any]) -> StepResponse:
        body = dict(body)
        session_id = body.pop("session_id", None)
        try:
            request = StepRequest.model_validate(body)
            action = TextAction.model_validate(request.action)
        except ValidationError as error:
            raise HTTPException(422, f"malformed action: {validation_message(error)}") from None
        return StepResponse(**serialize_observation(await do_step(action, session_id)))

    @app.get("/state")
    async def state(session_id: str | None = None) -> dict[str, Any]:
        return (await do_state(session_id)).model_dump()

    async def create_http_session(client: str | None) -> str:
        return (await open_session(SessionKind.HTTP, client)).id

    async def close_http_session(session_id: str) -> None:
        if find(session_id).kind is not SessionKind.HTTP:
            raise HTTPException(422, f"session {session_id!r} is not an HTTP session")
        await sessions.close(session_id)

    mcp_backend = McpBackend(call_tool, create_http_session, close_http_session, actions, name)

    add_mcp_routes(app, mcp_backend, sessions)

    @app.websocket("/ws")
    async def websocket_session(websocket: WebSocket) -> None:
        await run_websocket_session(websocket, sessions, max_body_bytes, tasks, mcp_backend)

    return app
