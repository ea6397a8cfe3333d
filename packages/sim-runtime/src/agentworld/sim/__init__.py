"""agentworld-sim: world models served as simulated environments.

``Simulator`` (async open/step/close over many episodes, batched), ``SimEnv``
(Gymnasium text env), ``SimVectorEnv`` (Gymnasium ``VectorEnv``, N episodes per
batched step) and the backends ``hf`` (``HFBackend``, ``HFWorldModel``),
``openai`` (``OpenAIBackend``, ``OpenAIWorldModel``) and ``vllm`` (``VLLMBackend``,
``VLLMWorldModel``). Every name is imported on first access, so loading the
plugin (``agentworld.sim.plugin``) does not import torch. Importing the package registers
``agentworld/sim-v0`` with Gymnasium (:mod:`agentworld.sim.registration`):
``gymnasium.make("agentworld/sim-v0", checkpoint=DIR)``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from agentworld.sim import forks  # noqa: F401 -- its fork hook must precede any fork
from agentworld.sim.registration import register_envs

_LAZY = {
    "SimEnv": "agentworld.sim.env",
    "SimVectorEnv": "agentworld.sim.vector_env",
    "SimEnvFactory": "agentworld.sim.env_factory",
    "Simulator": "agentworld.sim.simulator",
    "HFBackend": "agentworld.sim.backends.hf",
    "HFWorldModel": "agentworld.sim.backends.hf",
    "OpenAIBackend": "agentworld.sim.backends.openai_client",
    "OpenAIWorldModel": "agentworld.sim.backends.openai_client",
    "VLLMBackend": "agentworld.sim.backends.vllm",
    "VLLMWorldModel": "agentworld.sim.backends.vllm",
}

__all__ = list(_LAZY)

register_envs()


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentworld.sim' has no attribute {name!r}")
