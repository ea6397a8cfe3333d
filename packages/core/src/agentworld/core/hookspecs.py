"""Hook specifications of the ``agentworld`` pluggy project.

Every hook receives a ``register`` callback instead of returning values
(the simonw/llm pattern). ``register(name, factory)`` records a zero-argument
``factory`` that builds the object on first use, so listing plugins imports
nothing heavy. Built-in features use these same hooks.

The application adds one more hook to the same project, ``register_commands``
(:mod:`agentworld.app.hookspecs`): the kernel does not depend on a CLI library.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("agentworld")
hookimpl = pluggy.HookimplMarker("agentworld")

Register = Callable[..., None]  # register(name, factory, priority=None)


@hookspec
def register_domains(register: Register) -> None:
    """Register domains: ``register(name, factory, priority=None)``, ``factory() -> Domain``;
    a second registration of a name wins only with a higher priority (equal: an error)."""


@hookspec
def register_rewards(register: Register) -> None:
    """Register fidelity rewards: ``register(name, factory)``, ``factory(**options) -> RewardFn``."""


@hookspec
def register_trainers(register: Register) -> None:
    """Register training stages: ``register(name, factory)``, ``factory() -> Trainer``."""


@hookspec
def register_sim_backends(register: Register) -> None:
    """Register world-model backends: ``register(name, factory)``, ``factory() -> SimBackend``."""
