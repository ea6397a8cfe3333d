"""Entry point ``trainers``: registers the ``cpt`` and ``sft`` stages (torch is imported only when built)."""

from __future__ import annotations

from typing import Any

from agentworld.core.hookspecs import Register, hookimpl


def _cpt() -> Any:
    from agentworld.trainers.cpt import CptTrainer

    return CptTrainer()


def _sft() -> Any:
    from agentworld.trainers.sft import SftTrainer

    return SftTrainer()


@hookimpl
def register_trainers(register: Register) -> None:
    """Register ``cpt`` and ``sft``."""
    register("cpt", _cpt)
    register("sft", _sft)
