"""Gymnasium registration of the real search environment: ``gymnasium.make("agentworld/search-v0")``.

Registered when :mod:`agentworld.domains.search` is imported. Each ``reset`` without a task
draws one from :class:`~agentworld.domains.search.tasks.SearchTaskSampler` with a seed from
the environment's generator; the instruction is the reset observation.
"""

from __future__ import annotations

from typing import Any

import gymnasium

ENV_ID = "agentworld/search-v0"


def make_env(**kwargs: Any) -> Any:
    """A :class:`~agentworld.domains.search.env.SearchEnv` (``kwargs`` go to its constructor)."""
    from agentworld.domains.search.env import SearchEnv

    return SearchEnv(**kwargs)


def register_envs() -> None:
    """Register :data:`ENV_ID` with Gymnasium (once; no environment is made)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point=make_env)
