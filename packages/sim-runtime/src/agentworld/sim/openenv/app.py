"""The OpenEnv-protocol server app (FastAPI): HTTP and WebSocket routes over sessions.

Routes (payloads as in ``openenv.core.env_server.http_server``, openenv-core 0.3):

- ``GET /health`` -> ``{"status": "healthy"}``; ``GET /schema``, ``GET /metadata``.
- ``WS /ws``: one session per connection. Client messages ``{"type": "reset", "data":
  {seed?, episode_id?, task?}}``, ``{"type": "step", "data": {"text": ...}}``, ``{"type":
  "state"}``, ``{"type": "close"}``; replies ``{"type": "observation", "data": {"observation":
  {"text", "info"}, "reward", "done"}}``, ``{"type": "state", "data": {...}}`` or ``{"type":
  "error", "data": {"message", "code"}}``. A bad message gets an error reply and the session
  goes on; a connection beyond ``max_sessions`` gets a ``CAPACITY_REACHED`` error and is closed.
- ``POST /reset``, ``POST /step``, ``GET /state``: stateless as OpenEnv defines them (a fresh
  env per request; ``/step`` resets it first) unless ``session_id`` names an HTTP session made
  by ``POST /sessions`` (closed by ``DELETE /sessions/{id}``); ``GET /sessions`` counts them.

HTTP errors are ``{"detail": message}``: 404 unknown session, 409 step with no running
episode, 413 body over ``max_body_bytes``, 422 malformed request or action, 503 at capacity.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from agentworld.sim.openenv.envs import EpisodeOverError, ServedEnv
from agentworld.sim.openenv.limits import BodyLimitMiddleware
from agentworld.sim.openenv.models import EpisodeState, TextAction, TextObservation
from agentworld.sim.openenv.sessions import (
    Session,
    SessionKind,
    SessionLimitError,
    SessionManager,
    UnknownSessionError,
)
from agentworld.sim.openenv.ws import reset_arguments, run_websocket_session, validation_message
from fastapi import FastAPI, HTTPException, WebSocket
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
            needed; ``None``: never.

    Returns:
        The FastAPI app; ``app.state.sessions`` is its :class:`SessionManager`.
    """
    sessions = SessionManager(factory, max_sessions, idle_timeout_s)
    app = FastAPI(title=f"agentworld OpenEnv server: {name}", description=description)
    app.state.sessions, app.state.max_body_bytes = sessions, max_body_bytes
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)

    async def open_session(kind: SessionKind) -> Session:
        try:
            return await sessions.open(kind)
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

    async def reset_on(session: Session, arguments: dict[str, Any]) -> TextObservation:
        assert session.env is not None
        return await run(session, functools.partial(session.env.reset, **arguments))

    async def step_on(session: Session, action: TextAction, reset: bool) -> TextObservation:
        env = session.env
        assert env is not None

        def reset_then_step() -> TextObservation:
            env.reset()
            return env.step(action.text)

        return await run(
            session, reset_then_step if reset else functools.partial(env.step, action.text)
        )

    @app.get("/health", response_model=HealthResponse)
    async def health() -> HealthResponse:
        return HealthResponse()

    @app.get("/metadata", response_model=EnvironmentMetadata)
    async def metadata() -> EnvironmentMetadata:
        return EnvironmentMetadata(name=name, description=description or name)

    @app.get("/schema", response_model=SchemaResponse)
    async def schema() -> SchemaResponse:
        return SchemaResponse(
            action=TextAction.model_json_schema(),
            observation=TextObservation.model_json_schema(),
            state=EpisodeState.model_json_schema(),
        )

    @app.get("/sessions")
    async def count_sessions() -> dict[str, int]:
        counts = {kind.value: sessions.count(kind) for kind in SessionKind}
        return {"active": sessions.num_sessions, "max": max_sessions, **counts}

    @app.post("/sessions")
    async def create_session() -> dict[str, str]:
        return {"session_id": (await open_session(SessionKind.HTTP)).id}

    @app.delete("/sessions/{session_id}")
    async def delete_session(session_id: str) -> dict[str, Any]:
        find(session_id)
        await sessions.close(session_id)
        return {"session_id": session_id, "closed": True}

    @app.post("/reset", response_model=ResetResponse)
    async def reset(body: dict[str, Any] | None = None) -> ResetResponse:
        body = dict(body or {})
        session_id = body.pop("session_id", None)
        try:
            arguments = reset_arguments(body)
        except (ValueError, ValidationError) as error:
            detail = validation_message(error) if isinstance(error, ValidationError) else str(error)
            raise HTTPException(422, detail) from None
        if session_id is not None:
            observation = await reset_on(find(session_id), arguments)
            return ResetResponse(**serialize_observation(observation))
        session = await open_session(SessionKind.ONE_SHOT)
        try:
            observation = await reset_on(session, arguments)
        finally:
            await sessions.close(session.id)
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
        if session_id is not None:
            observation = await step_on(find(session_id), action, reset=False)
            return StepResponse(**serialize_observation(observation))
        session = await open_session(SessionKind.ONE_SHOT)
        try:
            observation = await step_on(session, action, reset=True)
        finally:
            await sessions.close(session.id)
        return StepResponse(**serialize_observation(observation))

    @app.get("/state")
    async def state(session_id: str | None = None) -> dict[str, Any]:
        if session_id is None:
            return EpisodeState(
                domain=name, simulated=bool(getattr(factory, "simulated", False))
            ).model_dump()
        session = find(session_id)
        assert session.env is not None
        return (await session.run(session.env.state, session.id)).model_dump()

    @app.websocket("/ws")
    async def websocket_session(websocket: WebSocket) -> None:
        await run_websocket_session(websocket, sessions, max_body_bytes)

    return app
