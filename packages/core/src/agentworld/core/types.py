"""Episode data types shared by every package (pydantic v2).

An :class:`Episode` is one rollout of a policy in an environment: an initial
observation followed by a list of :class:`Step` transitions. The field names
follow Gymnasium (``reward``, ``terminated``, ``truncated``, ``info``).
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


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

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        """An :class:`ObservationText` (what real environments return) validates as its text
        and public state."""
        if isinstance(value, ObservationText):
            return {"text": value.text, "state": value.state}
        return value


class ObservationText(str):
    """An observation as a real environment returns it: a ``str`` (what Gymnasium's
    ``spaces.Text`` holds and the agent sees) that also carries ``state``, the structured state
    the agent may see (for the terminal: ``cwd`` and ``exit_code``, both shown in the prompt).

    Privileged state (e.g. a file-tree snapshot) is never in it: real environments give that
    through ``privileged_state()``, for collection and scoring. Compares, hashes and
    serialises as the plain text. It has :class:`Observation`'s ``text`` and ``state``, so
    code that reads those takes either (tell observations from actions in a history by
    ``isinstance(item, Action)``), and pydantic fields of type ``Observation`` accept it
    (converted to a real :class:`Observation`).

    Args:
        text: The observation text.
        state: Public structured state, or ``None``.
    """

    state: dict[str, Any] | None

    def __new__(cls, text: str, state: dict[str, Any] | None = None) -> ObservationText:
        obj = super().__new__(cls, text)
        obj.state = state
        return obj

    @property
    def text(self) -> str:
        """The observation as a plain ``str``."""
        return str.__str__(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (ObservationText, (self.text, self.state))

    def to_observation(self, state: dict[str, Any] | None = None) -> Observation:
        """An :class:`Observation` of this text with ``state`` (default: the public state)."""
        return Observation(text=self.text, state=self.state if state is None else state)


class Step(BaseModel):
    """One transition: the action taken and what followed it."""

    model_config = ConfigDict(extra="forbid")

    action: Action
    observation: Observation
    reward: float = Field(0.0, allow_inf_nan=False)  # NaN or inf: a one-line read error
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
        reward: The reward footer's reward when the world model predicts rewards and the
            footer parsed (:func:`agentworld.core.formats.parse_footer`), else ``None``.
        terminated: The footer's ``terminated`` flag, likewise.
        served_by: Which server process answered, when a served backend names one (the
            response's ``system_fingerprint``: ``agentworld serve-openai`` sets a random id
            per process), else ``None``.
    """

    text: str
    observation: str | None
    num_tokens: int = 0
    reward: float | None = None
    terminated: bool | None = None
    served_by: str | None = None
