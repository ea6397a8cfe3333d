"""Episode data types shared by every package (pydantic v2).

An :class:`Episode` is one rollout of a policy in an environment: an initial
observation followed by a list of :class:`Step` transitions. The field names
follow Gymnasium (``reward``, ``terminated``, ``truncated``, ``info``).
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Action(BaseModel):
    """An agent action.

    Attributes:
        text: The raw action text as the agent emitted it (for the terminal
            domain, one shell command line).
        name: Parsed tool name, when the action is a tool call.
        arguments: Parsed tool arguments, when the action is a tool call.
    """

    model_config = ConfigDict(extra="forbid")

    text: str
    name: str | None = None
    arguments: dict[str, Any] | None = None


class Observation(BaseModel):
    """What the environment shows the agent.

    Attributes:
        text: The observation exactly as the agent sees it.
        state: Optional structured state behind the text (for the terminal:
            ``cwd``, ``exit_code``, ``files``), used by domain scorers and
            rationales; never shown to the world model as input.
    """

    model_config = ConfigDict(extra="forbid")

    text: str
    state: dict[str, Any] | None = None


class Step(BaseModel):
    """One transition: the action taken and what followed it."""

    model_config = ConfigDict(extra="forbid")

    action: Action
    observation: Observation
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict)


class Task(BaseModel):
    """A task given to the agent at reset.

    Attributes:
        id: Stable task identifier (deterministic given the sampler seed).
        domain: Domain name, e.g. ``"terminal"``.
        instruction: Natural-language goal shown to the agent.
        kind: Task family, e.g. ``"create"``, ``"search"``.
        setup: Domain-specific set-up data (for the terminal: files to create).
        check: Domain-specific success check data.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    domain: str
    instruction: str
    kind: str = ""
    setup: dict[str, Any] = Field(default_factory=dict)
    check: dict[str, Any] = Field(default_factory=dict)


class Episode(BaseModel):
    """A whole trajectory.

    Attributes:
        id: Unique episode id.
        domain: Domain name.
        task: The task the policy was given (``None`` for free play).
        system_prompt: The world-model system prompt describing the
            environment (rendered by the domain).
        initial_observation: Observation returned by ``reset``.
        steps: Transitions in order; ``steps[i]`` is turn ``i``.
        metadata: Provenance: ``env_version``, ``policy``, ``seed``, ``source``.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    domain: str
    task: Task | None = None
    system_prompt: str = ""
    initial_observation: Observation
    steps: list[Step] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def observations(self) -> list[Observation]:
        """All observations in order, the initial one first (``len(steps) + 1``)."""
        return [self.initial_observation, *(s.observation for s in self.steps)]


class Prediction(BaseModel):
    """A world model's answer to one request.

    Attributes:
        text: The raw generated answer (reasoning and the observation block).
        observation: The parsed ``<predicted_observation>`` content, or
            ``None`` when the answer is malformed.
        num_tokens: Generated tokens.
    """

    text: str
    observation: str | None
    num_tokens: int = 0
