"""agentworld swe domain: a real git repository workspace with SWE-agent's tools, sandboxed.

Public API (imported lazily)::

    SweDomain, SweEnv, SweTaskSampler, ScriptedExpert, RandomPolicy, score

Importing the package registers ``agentworld/swe-v0`` with Gymnasium
(:mod:`agentworld.domains.swe.registration`).
"""

from __future__ import annotations

import importlib
from typing import Any

from agentworld.domains.swe.registration import register_envs

_EXPORTS = {
    "SweDomain": "domain",
    "SweEnv": "env",
    "SweTaskSampler": "tasks",
    "ScriptedExpert": "policies",
    "RandomPolicy": "policies",
    "score": "scorer",
}

__all__ = sorted(_EXPORTS)

register_envs()


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_EXPORTS[name]}")
    return getattr(module, name)
