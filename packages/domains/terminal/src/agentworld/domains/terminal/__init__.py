"""agentworld terminal domain: real bash in a sandboxed pseudo-terminal.

Public API (imported lazily)::

    TerminalDomain, TerminalEnv, TerminalTaskSampler, ScriptedExpert,
    RandomPolicy, score, explain, detect_sandbox, Limits

Importing the package registers ``agentworld/terminal-v0`` with Gymnasium
(:mod:`agentworld.domains.terminal.registration`).
"""

from __future__ import annotations

from agentworld.core.lazy import lazy_exports
from agentworld.domains.terminal.registration import register_envs

_EXPORTS = {
    "TerminalDomain": "domain",
    "TerminalEnv": "env",
    "TerminalTaskSampler": "tasks",
    "ScriptedExpert": "expert",
    "RandomPolicy": "random_policy",
    "score": "scorer",
    "explain": "explain",
    "detect_sandbox": "sandbox",
    "Limits": "sandbox",
}

__all__ = sorted(_EXPORTS)

register_envs()


__getattr__ = lazy_exports(__name__, _EXPORTS)
