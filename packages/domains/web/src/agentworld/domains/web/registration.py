"""Gymnasium registration of the real web environment: ``gymnasium.make("agentworld/web-v0")``.

Registered when :mod:`agentworld.domains.web` is imported. Each ``reset`` without a task draws
one from :class:`~agentworld.domains.web.tasks.WebTaskSampler`.
"""

from __future__ import annotations

from typing import Any

import gymnasium

ENV_ID = "agentworld/web-v0"


def make_env(**kwargs: Any) -> Any:
    """A :class:`~agentworld.domains.web.env.WebEnv` (``kwargs`` go to its constructor)."""
    from agentworld.domains.web.env import WebEnv

    return WebEnv(**kwargs)


def register_envs() -> None:
    """Register :data:`ENV_ID` with Gymnasium (once; no environment is made)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point=make_env)
