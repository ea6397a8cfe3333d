"""agentworld web domain: a real headless Chromium on local web apps, BrowserGym observations
and actions.

Public API (imported lazily)::

    WebDomain, WebEnv, WebTaskSampler, ScriptedExpert, RandomPolicy, score

Importing the package registers ``agentworld/web-v0`` with Gymnasium
(:mod:`agentworld.domains.web.registration`).
"""

from __future__ import annotations

from agentworld.core.lazy import lazy_exports
from agentworld.domains.web.registration import register_envs

_EXPORTS = {
    "WebDomain": "domain",
    "WebEnv": "env",
    "WebTaskSampler": "tasks",
    "ScriptedExpert": "policies",
    "RandomPolicy": "policies",
    "score": "scorer",
}

__all__ = sorted(_EXPORTS)

register_envs()


__getattr__ = lazy_exports(__name__, _EXPORTS)
