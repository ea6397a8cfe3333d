"""Plugins built into agentworld-core: the two reference world models used as baselines.

``copy-previous`` predicts that the next observation equals the last one
shown; ``empty`` predicts an empty observation. Both read only the request
messages, so they run anywhere without a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentworld.core.formats import OBS_CLOSE, OBS_OPEN, parse_prediction, wrap_observation
from agentworld.core.hookspecs import hookimpl
from agentworld.core.types import Prediction


def _last_observation(messages: list[dict[str, str]]) -> str:
    for message in reversed(messages):
        if message["role"] == "assistant":
            return parse_prediction(message["content"]) or ""
    system = messages[0]["content"] if messages else ""
    marker = "Initial observation:\n"
    return system.split(marker, 1)[1] if marker in system else ""


class ConstantWorldModel:
    """A baseline :class:`~agentworld.core.protocols.WorldModel`.

    Args:
        mode: ``"copy-previous"`` or ``"empty"``.
    """

    def __init__(self, mode: str):
        if mode not in ("copy-previous", "empty"):
            raise ValueError(f"mode must be 'copy-previous' or 'empty', got {mode!r}")
        self.mode = mode

    def predict(
        self, requests: Sequence[list[dict[str, str]]], *, max_new_tokens: int | None = None
    ) -> list[Prediction]:
        out = []
        for messages in requests:
            obs = _last_observation(messages) if self.mode == "copy-previous" else ""
            out.append(Prediction(text=wrap_observation(obs), observation=obs))
        return out


class ConstantBackend:
    """Sim backend wrapper so baselines load by name like trained models."""

    def __init__(self, mode: str):
        self.name = mode

    def load(self, path: str | None = None, **options: Any) -> ConstantWorldModel:
        return ConstantWorldModel(self.name)


@hookimpl
def register_sim_backends(register):
    register("copy-previous", lambda: ConstantBackend("copy-previous"))
    register("empty", lambda: ConstantBackend("empty"))


__all__ = ["ConstantWorldModel", "ConstantBackend", "OBS_OPEN", "OBS_CLOSE"]
