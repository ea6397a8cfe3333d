"""agentworld-sim: world models served as simulated environments.

``Simulator`` (async open/step/close over many episodes, batched), ``SimEnv``
(Gymnasium text env) and the ``hf`` backend (``HFBackend``, ``HFWorldModel``;
imported lazily because they pull in torch and transformers).
"""

from __future__ import annotations

from typing import Any

from agentworld.sim.env import SimEnv
from agentworld.sim.simulator import Simulator

__all__ = ["HFBackend", "HFWorldModel", "SimEnv", "Simulator"]


def __getattr__(name: str) -> Any:
    if name in ("HFBackend", "HFWorldModel"):
        from agentworld.sim.backends import hf

        return getattr(hf, name)
    raise AttributeError(f"module 'agentworld.sim' has no attribute {name!r}")
