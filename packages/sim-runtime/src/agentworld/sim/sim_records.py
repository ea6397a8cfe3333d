"""The records a :class:`~agentworld.sim.simulator.Simulator` keeps: a request that failed alone,
an episode's history or session, and one queued step."""

from __future__ import annotations

from dataclasses import dataclass

from agentworld.core.types import Prediction
from agentworld.core.world_models import WorldModelSession

Message = dict[str, str]


class FailedPrediction(Prediction):
    """A request that failed alone (e.g. it needs more KV cache than the engine has):
    ``observation`` is ``None`` and ``error`` says why. Other requests of its batch are
    unaffected."""

    error: str


@dataclass(slots=True)
class EpisodeState:
    session: WorldModelSession | None  # the world model holds the history
    messages: list[Message]  # else it is kept here
    turns: int = 0
    busy: bool = False


@dataclass(slots=True)
class PendingStep:
    episode_id: str
    action: str
    started: bool = False
