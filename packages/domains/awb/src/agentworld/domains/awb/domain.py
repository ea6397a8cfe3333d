"""A data-only domain: an AgentWorldBench domain known from recorded trajectories alone.

It has everything training and evaluation need (system prompt, scorer, action types, facts)
and no real environment: :meth:`DataOnlyDomain.make_env` raises ``RuntimeError`` saying so,
as the :class:`~agentworld.core.protocols.Domain` protocol asks.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld.core.answers import GUI_DOMAINS, clean_reference
from agentworld.core.protocols import Policy, TaskSampler
from agentworld.core.sequences import multiset_f1
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.awb.prompts import ROLES, system_prompt

VERSION = "awb-data-1"


class NoTasks:
    """The task sampler of a data-only domain: tasks come with the recorded trajectories."""

    def __init__(self, domain: str):
        self.domain = domain

    def sample(self, n: int, *, seed: int) -> list[Task]:
        """Raises ``RuntimeError``: a data-only domain has no task generator."""
        raise RuntimeError(
            f"domain {self.domain!r} is data-only here: its tasks come with recorded "
            "trajectories (AgentWorldBench rows), there is no task generator"
        )


def line_f1(predicted: str, reference: str) -> float:
    """F1 of the two texts' lines as multisets (stripped lines; two empty texts score 1)."""
    return multiset_f1((line.strip() for line in predicted.strip().splitlines()),
                       (line.strip() for line in reference.strip().splitlines()))


class DataOnlyDomain:
    """One of the seven AgentWorldBench domains without a real environment here.

    Args:
        name: ``mcp``, ``search``, ``terminal``, ``swe``, ``android``, ``web`` or ``os``.

    Raises:
        ValueError: ``name`` is not an AgentWorldBench domain.
    """

    has_environment = False

    def __init__(self, name: str):
        if name not in ROLES:
            raise ValueError(f"unknown AgentWorldBench domain {name!r}; valid: {', '.join(ROLES)}")
        self.name, self.version = name, VERSION

    def system_prompt(self, task: Task | None) -> str:
        return system_prompt(self.name, task.instruction if task else None)

    def make_env(self, **kwargs: Any):
        raise RuntimeError(
            f"domain {self.name!r} is data-only here: no real environment runs on this machine; "
            "train and evaluate it from AgentWorldBench rows (agentworld train --data, "
            "agentworld bench)"
        )

    def tasks(self) -> TaskSampler:
        return NoTasks(self.name)

    def policies(self) -> dict[str, Policy]:
        return {}

    def score(self, predicted: str, reference: Observation) -> float:
        """Line F1 (multiset of stripped lines) against the reference without its
        ``**Environment Observation:**`` marker, in [0, 1]."""
        return line_f1(predicted, clean_reference(reference.text))

    def action_type(self, action: Action) -> str:
        """The tool name of a JSON tool call (``{"name": ...}``, fenced or not), else the word
        before the first ``(``, space or newline of the action (``click``, ``ls``)."""
        text = action.text.strip().removeprefix("```json").removeprefix("```").strip()
        text = text.removesuffix("```").strip()
        if text.startswith("{"):
            try:
                call = json.loads(text)
            except json.JSONDecodeError:
                call = None
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                return call["name"]
        word = text.replace("(", " ").split(maxsplit=1)
        return word[0][:32] if word else "empty"

    def describe(self) -> dict[str, str]:
        facts = {"environment": "none here (data-only: AgentWorldBench rows)",
                 "simulates": ROLES[self.name].split(":")[0]}
        if self.name in GUI_DOMAINS:
            facts["output"] = "exactly one closed <predicted_observation> block"
        return facts
