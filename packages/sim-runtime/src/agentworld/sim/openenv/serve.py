"""``agentworld serve``: build the OpenEnv app for a domain (simulated or real) and run it."""

from __future__ import annotations

import signal
from typing import Any

from agentworld.core.protocols import DiscreteActionDomain
from agentworld.sim.openenv.app import MAX_BODY_BYTES, create_app
from agentworld.sim.openenv.envs import RealEnvFactory, SimEnvFactory
from agentworld.sim.openenv.tasks import TaskPool
from agentworld.sim.server.auth import check_exposure
from agentworld.sim.server.slow_clients import uvicorn_options
from fastapi import FastAPI


def build_app(
    domain: str,
    *,
    checkpoint: str | None = None,
    real: bool = False,
    backend: str = "hf",
    load_options: dict[str, Any] | None = None,
    env_options: dict[str, Any] | None = None,
    max_sessions: int = 8,
    max_body_bytes: int = MAX_BODY_BYTES,
    tasks: bool = True,
    num_listed_tasks: int = 0,
    api_key: str | None = None,
    max_sessions_per_client: int | None = None,
    max_ws_per_client: int | None = None,
    idle_timeout_s: float | None = 600.0,
) -> FastAPI:
    """The OpenEnv app serving ``domain``: simulated from ``checkpoint`` or real.

    Simulated: the world model is loaded once (``get_sim_backend(backend).load(checkpoint,
    **load_options)``) and every session is a :class:`~agentworld.sim.SimEnv`
    (``env_options``: ``max_steps``, ``reward_source``, ...) on one shared Simulator. Real:
    every session is ``domain.make_env(**env_options)``.

    With ``tasks`` a reset gets the task of its ``seed`` from the domain's sampler (or one
    of ``num_listed_tasks`` listed tasks by ``task_id``); without, episodes are free play.
    ``api_key``, ``max_sessions_per_client``, ``max_ws_per_client`` and ``idle_timeout_s``
    (seconds) go to :func:`create_app`.

    Raises:
        ValueError: Neither or both of ``checkpoint`` and ``real`` were given.
        agentworld.core.plugins.UnknownPluginError: ``domain`` or ``backend`` is not installed.
    """
    from agentworld.core.plugins import get_domain, get_sim_backend

    if (checkpoint is None) == (not real):
        raise ValueError("serve needs exactly one of --model DIR (simulated) or --real")
    domain_obj = get_domain(domain)
    if real:
        factory: Any = RealEnvFactory(domain_obj, **(env_options or {}))
        kind = "real"
    else:
        world_model = get_sim_backend(backend).load(checkpoint, **(load_options or {}))
        factory = SimEnvFactory(world_model, domain_obj, **(env_options or {}))
        kind = f"simulated by {checkpoint}"
    pool = TaskPool(domain_obj.tasks(), num_listed=num_listed_tasks) if tasks else None
    return create_app(
        factory,
        name=domain,
        description=f"agentworld {domain} environment ({kind})",
        max_sessions=max_sessions,
        max_body_bytes=max_body_bytes,
        tasks=pool,
        actions=domain_obj.actions if isinstance(domain_obj, DiscreteActionDomain) else None,
        api_key=api_key,
        max_sessions_per_client=max_sessions_per_client,
        max_ws_per_client=max_ws_per_client,
        idle_timeout_s=idle_timeout_s,
    )


def serve(
    app: FastAPI,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    api_key: str | None = None,
    no_auth: bool = False,
) -> None:
    """Run ``app`` with uvicorn until interrupted (SIGINT or SIGTERM; open connections get
    10 s, then every session's env is closed). WebSocket frames over 16 times the app's
    message limit are refused by the protocol layer (close code 1009) before being buffered.
    Slow clients are cut off (:mod:`agentworld.sim.server.slow_clients`): request headers
    must arrive within 10 s, idle keep-alive connections close after 5 s.

    Raises:
        ValueError: ``host`` is not loopback and there is neither ``api_key`` (the key the
            app was built with) nor ``no_auth`` (see :mod:`agentworld.sim.server.auth`).
        SystemExit: 143 after a SIGTERM, once the server has shut down (so exit handlers run).
    """
    check_exposure(host, api_key, no_auth=no_auth)
    limit = app.state.max_body_bytes
    # uvicorn re-raises a SIGTERM it caught once it has shut down (``Server.capture_signals``);
    # with the default action the process would then die without running ``atexit``, leaving
    # the episode roots' session directory behind. This handler ends it as an exit instead.
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        _run_uvicorn(app, host, port, limit)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _run_uvicorn(app: FastAPI, host: str, port: int, limit: int) -> None:
    import uvicorn

    uvicorn.run(
        app,
        host=host,
        port=port,
        ws_max_size=16 * limit,
        log_level="info",
        timeout_graceful_shutdown=10,
        **uvicorn_options(),
    )
