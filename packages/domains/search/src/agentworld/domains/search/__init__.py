"""agentworld search domain: a real BM25 engine over an offline corpus, AgentWorldBench tools.

Public API (imported lazily)::

    SearchDomain, SearchEnv, SearchTaskSampler, ScriptedExpert, RandomPolicy, Engine,
    load_engine, build_corpus, score

Importing the package registers ``agentworld/search-v0`` with Gymnasium
(:mod:`agentworld.domains.search.registration`).
"""

from __future__ import annotations

import importlib
from typing import Any

from agentworld.domains.search.registration import register_envs

_EXPORTS = {
    "SearchDomain": "domain",
    "SearchEnv": "env",
    "SearchTaskSampler": "tasks",
    "ScriptedExpert": "policies",
    "RandomPolicy": "policies",
    "Engine": "engine",
    "load_engine": "engine",
    "build_corpus": "corpus",
    "score": "scorer",
}

__all__ = sorted(_EXPORTS)

register_envs()


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_EXPORTS[name]}")
    return getattr(module, name)
