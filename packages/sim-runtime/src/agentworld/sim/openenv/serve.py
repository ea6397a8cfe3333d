"""``agentworld serve``: build the OpenEnv app for a domain (simulated or real) and run it."""

from __future__ import annotations

import logging
import re
import signal
import sys
from collections.abc import Sequence
from typing import Any

from agentworld.core.domain_base import domain_hooks
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
    allowed_origins: Sequence[str] = (),
) -> FastAPI:
    """The OpenEnv app serving ``domain``: simulated from ``checkpoint`` or real.

    Simulated: the world model is loaded once (``get_sim_backend(backend).load(checkpoint,
    **load_options)``) and every session is a :class:`~agentworld.sim.SimEnv`
    (``env_options``: ``max_steps``, ``reward_source``, ...) on one shared Simulator. Real:
    every session is ``domain.make_env(**env_options)``.

    With ``tasks`` a reset gets the task of its ``seed`` from the domain's sampler (or one
    of ``num_listed_tasks`` listed tasks by ``task_id``); without, episodes are free play.
    ``api_key``, ``max_sessions_per_client``, ``max_ws_per_client``, ``idle_timeout_s``
    (seconds) and ``allowed_origins`` go to :func:`create_app`.

    Raises:
        ValueError: Neither or both of ``checkpoint`` and ``real`` were given, or an allowed
            origin is no ``http(s)://host[:port]``.
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
        actions=domain_hooks(domain_obj).actions,
        api_key=api_key,
        max_sessions_per_client=max_sessions_per_client,
        max_ws_per_client=max_ws_per_client,
        idle_timeout_s=idle_timeout_s,
        allowed_origins=allowed_origins,
    )


def connection_banner(host: str, port: int, api_key: str | None, generated: bool) -> str:
    """What ``agentworld serve`` prints once at start: where to connect and with which token
    (the token itself only when ``generated``: a key the user gave is not echoed)."""
    name = f"[{host}]" if ":" in host else host
    url = f"http://{name}:{port}"
    lines = [f"agentworld serve: {url} (OpenEnv: /ws, /reset, /step, /mcp)"]
    if api_key is None:
        lines.append(
            "  no token (--no-token): every local user and process that reaches the port can "
            "use this server"
        )
    elif generated:
        lines += [
            f"  token (made for this run; every route but /health needs it): {api_key}",
            f"  send 'Authorization: Bearer {api_key}', or from a browser: "
            f"ws://{name}:{port}/ws?token={api_key}",
        ]
    else:
        lines.append(
            "  token: the API key you gave, as 'Authorization: Bearer KEY' (or /ws?token=KEY)"
        )
    return "\n".join(lines)


def serve(
    app: FastAPI,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    api_key: str | None = None,
    no_auth: bool = False,
    token_generated: bool = False,
) -> None:
    """Run ``app`` with uvicorn until interrupted (SIGINT or SIGTERM; open connections get
    10 s, then every session's env is closed). WebSocket frames over 16 times the app's
    message limit are refused by the protocol layer (close code 1009) before being buffered.
    Slow clients are cut off (:mod:`agentworld.sim.server.slow_clients`): request headers
    must arrive within 10 s, idle keep-alive connections close after 5 s. Prints
    :func:`connection_banner` (the token when ``token_generated``) to stderr first.

    Raises:
        ValueError: ``host`` is not loopback and there is neither ``api_key`` (the key the
            app was built with) nor ``no_auth`` (see :mod:`agentworld.sim.server.auth`).
        SystemExit: 143 after a SIGTERM, once the server has shut down (so exit handlers run).
    """
    check_exposure(host, api_key, no_auth=no_auth)
    print(connection_banner(host, port, api_key, token_generated), file=sys.stderr, flush=True)
    limit = app.state.max_body_bytes
    # uvicorn re-raises a SIGTERM it caught once it has shut down (``Server.capture_signals``);
    # with the default action the process would then die without running ``atexit``, leaving
    # the episode roots' session directory behind. This handler ends it as an exit instead.
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        _run_uvicorn(app, host, port, limit)
    finally:
        signal.signal(signal.SIGTERM, previous)


class RedactTokens(logging.Filter):
    """Replaces the value of every ``token=`` query parameter in a log record's message by
    ``***`` (uvicorn logs a WebSocket handshake's path with its query: ``/ws?token=KEY``)."""

    PATTERN = re.compile(r"([?&]token=)[^&\s\"']+")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "token=" in message:
            record.msg, record.args = self.PATTERN.sub(r"\1***", message), None
        return True


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _run_uvicorn(app: FastAPI, host: str, port: int, limit: int) -> None:
    import uvicorn

    redact = RedactTokens()
    for name in ("uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).addFilter(redact)
    uvicorn.run(
        app,
        host=host,
        port=port,
        ws_max_size=16 * limit,
        log_level="info",
        timeout_graceful_shutdown=10,
        **uvicorn_options(),
    )
