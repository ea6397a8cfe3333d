"""Gymnasium registration of the real swe environment: ``gymnasium.make("agentworld/swe-v0")``.

Registered when :mod:`agentworld.domains.swe` is imported. Each ``reset`` without a task draws
one from :class:`~agentworld.domains.swe.tasks.SweTaskSampler` with a seed from the
environment's generator; the issue text is the reset observation.
"""

from __future__ import annotations

from typing import Any

import gymnasium

ENV_ID = "agentworld/swe-v0"


def make_env(**kwargs: Any) -> Any:
    """A :class:`~agentworld.domains.swe.env.SweEnv` (``kwargs`` go to its constructor)."""
    from agentworld.domains.swe.env import SweEnv

    return SweEnv(**kwargs)


def register_envs() -> None:
    """Register :data:`ENV_ID` with Gymnasium (once; no environment is made)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point=make_env)
