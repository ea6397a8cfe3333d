"""Entry point ``trainers``: the training stages and the ``models`` CLI group.

Nothing heavy is imported here; torch loads when a stage is built or a command runs.
"""

from __future__ import annotations

from typing import Any

from agentworld.core.hookspecs import Register, hookimpl


def _cpt() -> Any:
    from agentworld.trainers.world_model.cpt import CptTrainer

    return CptTrainer()


def _sft() -> Any:
    from agentworld.trainers.world_model.sft import SftTrainer

    return SftTrainer()


def _rl() -> Any:
    from agentworld.trainers.world_model.rl import RlTrainer

    return RlTrainer()


def _policy_sft() -> Any:
    from agentworld.trainers.agents.policy_sft import PolicySftTrainer

    return PolicySftTrainer()


def _agent() -> Any:
    from agentworld.trainers.agents.trainer import AgentTrainer

    return AgentTrainer()


@hookimpl
def register_trainers(register: Register) -> None:
    """Register the world-model stages ``cpt``, ``sft``, ``rl`` and the agent stages
    ``agent`` (Q-learning or multi-turn GRPO) and ``policy_sft`` (behaviour cloning)."""
    register("cpt", _cpt)
    register("sft", _sft)
    register("rl", _rl)
    register("agent", _agent)
    register("policy_sft", _policy_sft)


@hookimpl
def register_commands(cli: Any) -> None:
    """Add ``agentworld models prepare|list``."""
    from agentworld.trainers.commands import register

    register(cli)
