"""agentworld-sim: world models served as simulated environments.

``Simulator`` (async open/step/close over many episodes, batched), ``SimEnv``
(Gymnasium text env), ``SimVectorEnv`` (Gymnasium ``VectorEnv``, N episodes per
batched step) and the backends ``hf`` (``HFBackend``, ``HFWorldModel``),
``openai`` (``OpenAIBackend``, ``OpenAIWorldModel``) and ``vllm`` (``VLLMBackend``,
``VLLMWorldModel``). Every name is imported on first access, so loading the
plugin (``agentworld.sim.plugin``) imports neither Gymnasium nor torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {
    "SimEnv": "agentworld.sim.env",
    "SimVectorEnv": "agentworld.sim.vector_env",
    "Simulator": "agentworld.sim.simulator",
    "HFBackend": "agentworld.sim.backends.hf",
    "HFWorldModel": "agentworld.sim.backends.hf",
    "OpenAIBackend": "agentworld.sim.backends.openai",
    "OpenAIWorldModel": "agentworld.sim.backends.openai",
    "VLLMBackend": "agentworld.sim.backends.vllm",
    "VLLMWorldModel": "agentworld.sim.backends.vllm",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentworld.sim' has no attribute {name!r}")
