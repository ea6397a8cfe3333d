"""Plugin entry point of agentworld-rewards: registers the built-in fidelity rewards.

Names: ``exact_match``, ``edit_similarity``, ``line_f1``, ``domain``,
``format_validity`` (rules), ``embedding``, ``llm_judge`` (model-based) and ``hybrid``.
Each factory takes the reward's keyword options
(``get_reward("edit_similarity", metric="indel")``); modules are imported on first use,
so listing rewards loads no model and needs no optional extra.
"""

from __future__ import annotations

from typing import Any

from agentworld.core.hookspecs import Register, hookimpl


@hookimpl
def register_rewards(register: Register) -> None:
    """Register the built-in rewards; modules are imported on first use only."""

    def exact_match(**options: Any) -> Any:
        from agentworld.rewards.rules import ExactMatch

        return ExactMatch(**options)

    def edit_similarity(**options: Any) -> Any:
        from agentworld.rewards.rules import EditSimilarity

        return EditSimilarity(**options)

    def line_f1(**options: Any) -> Any:
        from agentworld.rewards.rules import LineF1

        return LineF1(**options)

    def domain(**options: Any) -> Any:
        from agentworld.rewards.rules import DomainScore

        return DomainScore(**options)

    def format_validity(**options: Any) -> Any:
        from agentworld.rewards.rules import FormatValidity

        return FormatValidity(**options)

    def embedding(**options: Any) -> Any:
        from agentworld.rewards.embedding import EmbeddingSimilarity

        return EmbeddingSimilarity(**options)

    def llm_judge(**options: Any) -> Any:
        from agentworld.rewards.judge import LLMJudge

        return LLMJudge(**options)

    def hybrid(**options: Any) -> Any:
        from agentworld.rewards.hybrid import Hybrid

        return Hybrid(**options)

    for factory in (
        exact_match,
        edit_similarity,
        line_f1,
        domain,
        format_validity,
        embedding,
        llm_judge,
        hybrid,
    ):
        register(factory.__name__, factory)


@hookimpl
def register_commands(cli: Any) -> None:
    """Add ``agentworld bench infer|judge|score|run`` (AgentWorldBench's protocol)."""
    from agentworld.rewards.bench.cli import register

    register(cli)
