"""Collection policies of the mcp domain: ``scripted`` (:class:`ScriptedExpert`) and
``random`` (:class:`RandomPolicy`). The core has no shared ``llm`` policy yet, so none is
offered."""

from __future__ import annotations

from agentworld.domains.mcp.expert import ScriptedExpert
from agentworld.domains.mcp.random_policy import RandomPolicy


def make_policies(seed: int = 0) -> dict[str, ScriptedExpert | RandomPolicy]:
    """Fresh policies by name, seeded with ``seed``."""
    return {"scripted": ScriptedExpert(seed), "random": RandomPolicy(seed)}
