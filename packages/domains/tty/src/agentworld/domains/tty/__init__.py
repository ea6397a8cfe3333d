"""agentworld tty domain: the interactive terminal, keystrokes in and the screen out.

Public API (imported lazily)::

    TtyDomain, TtyEnv, Tty, TtyTaskSampler, ScriptedExpert, RandomPolicy, parse_action,
    render_action, score

Importing the package registers ``agentworld/tty-v0`` with Gymnasium
(:mod:`agentworld.domains.tty.registration`).
"""

from __future__ import annotations

from agentworld.core.lazy import lazy_exports
from agentworld.domains.tty.registration import register_envs

_EXPORTS = {
    "TtyDomain": "domain",
    "TtyEnv": "env",
    "Tty": "terminal",
    "TtyTaskSampler": "tasks",
    "ScriptedExpert": "policies",
    "RandomPolicy": "policies",
    "parse_action": "keys",
    "render_action": "keys",
    "score": "analysis",
}

__all__ = sorted(_EXPORTS)

register_envs()


__getattr__ = lazy_exports(__name__, _EXPORTS)
