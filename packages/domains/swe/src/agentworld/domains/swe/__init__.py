"""agentworld swe domain: a real git repository workspace with SWE-agent's tools, sandboxed.

Public API (imported lazily)::

    SweDomain, SweEnv, SweTaskSampler, ScriptedExpert, RandomPolicy, score

Importing the package registers ``agentworld/swe-v0`` with Gymnasium
(:mod:`agentworld.domains.swe.registration`).
"""

from __future__ import annotations

from agentworld.core.lazy import lazy_exports
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


__getattr__ = lazy_exports(__name__, _EXPORTS)
