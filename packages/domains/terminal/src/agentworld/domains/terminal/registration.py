"""Gymnasium registration of the real terminal: ``gymnasium.make("agentworld/terminal-v0")``.

Registered when :mod:`agentworld.domains.terminal` is imported (listing agentworld's plugins
imports it). Each ``reset`` without a task draws one from the domain's task sampler with a
seed from the environment's generator; the instruction is in the reset ``info``.
"""

from __future__ import annotations

from typing import Any

import gymnasium

ENV_ID = "agentworld/terminal-v0"


def make_env(**kwargs: Any) -> Any:
    """A :class:`~agentworld.domains.terminal.env.TerminalEnv` drawing its tasks from
    :class:`~agentworld.domains.terminal.tasks.TerminalTaskSampler` (``kwargs`` go to its
    constructor; ``tasks=None`` turns the sampler off)."""
    from agentworld.domains.terminal.env import TerminalEnv
    from agentworld.domains.terminal.tasks import TerminalTaskSampler

    kwargs.setdefault("tasks", TerminalTaskSampler())
    return TerminalEnv(**kwargs)


def register_envs() -> None:
    """Register :data:`ENV_ID` with Gymnasium (once; no environment is made)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point=make_env)
