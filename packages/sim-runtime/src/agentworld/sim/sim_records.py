"""The records a :class:`~agentworld.sim.simulator.Simulator` keeps: a request that failed alone,
an episode's history or session, and one queued step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    served_by: str | None = None  # the server process that answered the last turn


@dataclass(slots=True)
class PendingStep:
    episode_id: str
    action: str
    started: bool = False


def step_info(prediction: Prediction, episode: EpisodeState | None, parsed: bool) -> dict[str, Any]:
    """A step's ``info`` (see :class:`~agentworld.sim.simulator.Simulator`); records on
    ``episode`` which server process answered, to mark a step answered by another one."""
    info: dict[str, Any] = {
        "raw": prediction.text,
        "parsed": parsed,
        "num_tokens": prediction.num_tokens,
        "turn": episode.turns if episode is not None else -1,
    }
    if isinstance(prediction, FailedPrediction):
        info["error"] = prediction.error
    if episode is not None and prediction.served_by is not None:
        info["served_by"] = prediction.served_by
        if episode.served_by not in (None, prediction.served_by):
            info["replica_changed"] = True  # a router retry, or a rebalance
        episode.served_by = prediction.served_by
    return info
