"""Gymnasium registration of the text toy-text environments: ``agentworld/<variant>-v0``.

One id per :data:`~agentworld.domains.classic.variants.VARIANTS` name, e.g.
``gymnasium.make("agentworld/frozenlake-8x8-v0")`` or ``"agentworld/taxi-v0"``: a
:class:`~agentworld.domains.classic.env.ClassicEnv` (text observations, word actions; its time
limit is the wrapped Gymnasium environment's). Registered when
:mod:`agentworld.domains.classic` is imported.
"""

from __future__ import annotations

import gymnasium
from agentworld.domains.classic.variants import VARIANTS


def env_id(variant: str) -> str:
    """The Gymnasium id of ``variant`` (``"taxi"`` -> ``"agentworld/taxi-v0"``)."""
    return f"agentworld/{variant}-v0"


def register_envs() -> None:
    """Register every variant's id with Gymnasium (once; no environment is made)."""
    for name in VARIANTS:
        if env_id(name) not in gymnasium.registry:
            gymnasium.register(
                env_id(name),
                entry_point="agentworld.domains.classic.env:ClassicEnv",
                kwargs={"variant": name},
            )
