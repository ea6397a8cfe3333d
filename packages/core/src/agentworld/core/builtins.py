"""Plugins built into agentworld-core: the reference world models used as baselines.

``copy-previous`` predicts that the next observation equals the last one
shown; ``empty`` predicts an empty observation: ``""``, or, when the domain
defines ``empty_observation(previous_text)``, what the environment shows
after an action that outputs nothing (for the terminal: just the prompt
line). Both read only the request messages, so they run anywhere. The third,
``nearest`` (:mod:`agentworld.core.nearest`), answers the most similar real transition of the
training episodes it is loaded with (``load(None, train_data=URL)``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentworld.core.formats import (
    OBS_CLOSE,
    OBS_OPEN,
    previous_observation,
    wrap_observation,
)
from agentworld.core.hookspecs import hookimpl
from agentworld.core.domain_base import domain_hooks
from agentworld.core.types import Prediction


class ConstantWorldModel:
    """A baseline :class:`~agentworld.core.protocols.WorldModel`.

    Args:
        mode: ``"copy-previous"`` or ``"empty"``.
        domain: Optional domain; its ``empty_observation`` shapes the ``empty`` answer.

    Raises:
        ValueError: unknown ``mode``.
    """

    def __init__(self, mode: str, domain: Any = None):
        if mode not in ("copy-previous", "empty"):
            raise ValueError(f"mode must be 'copy-previous' or 'empty', got {mode!r}")
        self.mode = mode
        self.empty = domain_hooks(domain).empty_observation if domain is not None else None

    def predict(
        self, requests: Sequence[list[dict[str, str]]], *, max_new_tokens: int | None = None
    ) -> list[Prediction]:
        out = []
        for messages in requests:
            previous = previous_observation(messages)
            if self.mode == "copy-previous":
                obs = previous
            else:
                obs = self.empty(previous) if self.empty else ""
            out.append(Prediction(text=wrap_observation(obs), observation=obs))
        return out


class ConstantBackend:
    """Sim backend wrapper so baselines load by name like trained models.

    Args:
        mode: ``"copy-previous"`` or ``"empty"``.
        sim_backend: ``sim_backend(name) -> SimBackend``, the registry's lookup
            (:func:`agentworld.core.plugins.get_sim_backend`), handed in by whoever registers
            :class:`CorePlugin`, so that this module does not import the registry.
    """

    def __init__(self, mode: str, sim_backend: Callable[[str], Any]):
        self.name = mode
        self.sim_backend = sim_backend

    def load(self, path: str | None = None, *, domain: Any = None, **options: Any) -> ConstantWorldModel:
        """A :class:`ConstantWorldModel`; ``path`` and other options are ignored."""
        return ConstantWorldModel(self.name, domain)

    def make_env(self, world_model: Any, domain: Any = None, **options: Any) -> Any:
        """A simulated Gymnasium environment on ``world_model``: agentworld-sim's ``SimEnv``,
        found by name through its ``hf`` backend (core imports no other member).

        Raises:
            agentworld.core.plugins.UnknownPluginError: agentworld-sim is not installed.
        """
        return self.sim_backend("hf").make_env(world_model, domain=domain, **options)


class CorePlugin:
    """agentworld-core's own plugin (registered as ``"core"`` by
    :func:`agentworld.core.plugins.load_plugins`): the three baseline sim backends.

    Args:
        sim_backend: The registry's sim-backend lookup, for the baselines' simulated envs.
    """

    def __init__(self, sim_backend: Callable[[str], Any]):
        self.sim_backend = sim_backend

    @hookimpl
    def register_sim_backends(self, register: Callable[..., None]) -> None:
        from agentworld.core.nearest import NearestBackend

        for mode in ("copy-previous", "empty"):
            register(mode, lambda mode=mode: ConstantBackend(mode, self.sim_backend))
        register("nearest", lambda: NearestBackend(self.sim_backend))


__all__ = ["ConstantWorldModel", "ConstantBackend", "CorePlugin", "OBS_OPEN", "OBS_CLOSE"]
