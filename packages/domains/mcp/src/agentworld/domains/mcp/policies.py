"""Collection policies of the mcp domain: ``scripted`` (:class:`ScriptedExpert`), ``random``
(:class:`RandomPolicy`) and, with an endpoint configured, the shared ``llm``."""

from __future__ import annotations

from agentworld.core.domain_base import PolicyBase
from agentworld.core.llm_policy import TOOL_AGENT_PROMPT, LLMPolicy, endpoint
from agentworld.domains.mcp.expert import ScriptedExpert
from agentworld.domains.mcp.random_policy import RandomPolicy


def make_policies(seed: int = 0) -> dict[str, PolicyBase]:
    """Fresh policies by name, seeded with ``seed``: ``scripted`` and ``random``, plus the
    shared ``llm`` (:mod:`agentworld.core.llm_policy`, JSON tool calls) when
    ``$AGENTWORLD_LLM_BASE_URL`` is set."""
    out: dict[str, PolicyBase] = {"scripted": ScriptedExpert(seed), "random": RandomPolicy(seed)}
    if endpoint() is not None:
        out["llm"] = LLMPolicy(TOOL_AGENT_PROMPT, seed=seed)
    return out
