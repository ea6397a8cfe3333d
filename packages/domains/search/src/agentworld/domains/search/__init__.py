"""agentworld search domain: a real BM25 engine over an offline corpus, AgentWorldBench tools.

Public API (imported lazily)::

    SearchDomain, SearchEnv, SearchTaskSampler, ScriptedExpert, RandomPolicy, Engine,
    load_engine, build_corpus, score

Importing the package registers ``agentworld/search-v0`` with Gymnasium
(:mod:`agentworld.domains.search.registration`).
"""

from __future__ import annotations

from agentworld.core.lazy import lazy_exports
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


__getattr__ = lazy_exports(__name__, _EXPORTS)
