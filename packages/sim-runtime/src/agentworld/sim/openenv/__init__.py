"""OpenEnv-protocol server of simulated or real agentworld environments (``agentworld serve``).

Needs the ``openenv`` extra (``pip install 'agentworld-sim[openenv]'``): its wire types come
from the ``openenv`` package. :func:`create_app` builds the FastAPI app over an env factory,
:func:`build_app` builds it for a domain name and a checkpoint (or the real env).
"""

from agentworld.sim.openenv.app import MAX_BODY_BYTES, create_app
from agentworld.sim.openenv.envs import EpisodeOverError, RealEnvFactory, ServedEnv, SimEnvFactory
from agentworld.sim.openenv.models import EpisodeState, TextAction, TextObservation
from agentworld.sim.openenv.serve import build_app, serve
from agentworld.sim.openenv.sessions import (
    ClientLimitError,
    SessionKind,
    SessionLimitError,
    SessionManager,
)
from agentworld.sim.openenv.tasks import TaskPool

__all__ = [
    "MAX_BODY_BYTES",
    "ClientLimitError",
    "EpisodeOverError",
    "EpisodeState",
    "RealEnvFactory",
    "ServedEnv",
    "SessionKind",
    "SessionLimitError",
    "SessionManager",
    "SimEnvFactory",
    "TaskPool",
    "TextAction",
    "TextObservation",
    "build_app",
    "create_app",
    "serve",
]
