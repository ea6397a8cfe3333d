"""Gymnasium registration of the interactive terminal: ``gymnasium.make("agentworld/tty-v0")``.

Registered when :mod:`agentworld.domains.tty` is imported. Each ``reset`` without a task draws
one from :class:`~agentworld.domains.tty.tasks.TtyTaskSampler` with a seed from the
environment's generator; the instruction is in the reset ``info``.
"""

from __future__ import annotations

from typing import Any

import gymnasium

ENV_ID = "agentworld/tty-v0"


def make_env(**kwargs: Any) -> Any:
    """A :class:`~agentworld.domains.tty.env.TtyEnv` drawing its tasks from
    :class:`~agentworld.domains.tty.tasks.TtyTaskSampler` (``kwargs`` go to its constructor;
    ``tasks=None`` turns the sampler off)."""
    from agentworld.domains.tty.env import TtyEnv
    from agentworld.domains.tty.tasks import TtyTaskSampler

    kwargs.setdefault("tasks", TtyTaskSampler())
    return TtyEnv(**kwargs)


def register_envs() -> None:
    """Register :data:`ENV_ID` with Gymnasium (once; no environment is made)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point=make_env)
