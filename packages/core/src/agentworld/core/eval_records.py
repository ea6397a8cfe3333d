"""The records of a fidelity evaluation (:mod:`agentworld.core.evaluate`): its transitions,
per-prediction rows and aggregated result, and the split names they carry."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agentworld.core.types import Action, Observation

Z95 = 1.959963984540054
NO_ACTION_TYPE = "other"
IN_DISTRIBUTION = "in-distribution"
OUT_OF_DISTRIBUTION = "out-of-distribution"
REALISTIC = "realistic"  # whole real sources held out of training ([collect] realistic_sources)
DETERMINISTIC = "deterministic"  # the real answer is a function of the episode so far
NONDETERMINISTIC = "nondeterministic"  # it also depends on the clock, process ids, randomness


class Transition(BaseModel):
    """One evaluation item: predict the observation after ``action``.

    Attributes:
        episode_id: Source episode id.
        turn: Step index within the episode (0-based).
        messages: Prompt chat messages (``formats.sft_pair(episode, turn)[0]``).
        action: The agent action of this step.
        reference: The real next observation.
        action_type: ``domain.action_type(action)``; without a domain the tool
            name when the action is a tool call, else ``"other"``.
        output_nonempty: Whether the real output is non-empty (see :func:`output_text`).
        policy: The policy that collected the episode (``episode.metadata["policy"]``), or
            ``None`` when the episode does not say.
        split: :data:`IN_DISTRIBUTION` or :data:`OUT_OF_DISTRIBUTION`.
        consistency: Whether the real output depends on what earlier steps of the same
            episode wrote (the domain's ``consistency_turns`` hook; ``False`` without one).
        deterministic: Whether the real answer is a function of the episode so far (the
            domain's ``is_deterministic`` hook: not for output of the clock, process ids or
            randomness); ``None`` when the domain does not say.
    """

    episode_id: str
    turn: int
    messages: list[dict[str, str]]
    action: Action
    reference: Observation
    action_type: str
    output_nonempty: bool
    policy: str | None = None
    split: str = IN_DISTRIBUTION
    consistency: bool = False
    deterministic: bool | None = None


class MetricStat(BaseModel):
    """Mean of one metric over a group, with its 95% CI (see the module docstring)."""

    mean: float
    n: int
    std: float
    ci_low: float
    ci_high: float


class EvalRow(BaseModel):
    """One model's prediction for one transition, with every reward's score."""

    model: str
    episode_id: str
    turn: int
    action: str
    action_type: str
    output_nonempty: bool
    policy: str | None = None
    split: str = IN_DISTRIBUTION
    consistency: bool = False
    deterministic: bool | None = None
    reference: str
    prediction: str | None
    raw: str
    scores: dict[str, float]


class EvalResult(BaseModel):
    """Aggregated fidelity results; JSON-serialisable (``model_dump_json``).

    Nested dicts are keyed ``[model][metric]``, ``[model][action_type][metric]``,
    ``[model][turn][metric]`` and ``[model][policy][metric]`` (``by_policy`` over all
    transitions, ``by_policy_nonempty`` over those with non-empty real output; empty when no
    episode names its policy). ``models[0]`` is the primary model (the report compares it
    with the others). These and ``num_*`` cover the in-distribution split (everything when no
    transition is in it). ``splits`` counts ``{"episodes", "transitions", "nonempty",
    "consistency", "deterministic", "nondeterministic"}`` per split; ``by_split*`` are keyed ``[model][split][metric]``
    (``by_split_action_type_nonempty``: ``[model][split][action_type][metric]``, non-empty real
    output only); ``consistency`` is ``[model][metric]`` over the consistency transitions of
    every split. ``by_split_determinism`` is keyed ``[model][split][DETERMINISTIC |
    NONDETERMINISTIC][metric]`` (steps whose domain does not say are in neither);
    ``by_split_turn`` ``[model][split][turn][metric]`` (fidelity drift along the episode).
    """

    models: list[str]
    metrics: list[str]
    main_metric: str
    num_episodes: int
    num_transitions: int
    num_nonempty: int
    ci_method: str = "95%: Wilson score (0/1 scores), percentile bootstrap of the mean (others; n=1 -> [0, 1])"
    overall: dict[str, dict[str, MetricStat]]
    nonempty: dict[str, dict[str, MetricStat]]
    by_action_type: dict[str, dict[str, dict[str, MetricStat]]]
    by_turn: dict[str, dict[int, dict[str, MetricStat]]]
    by_policy: dict[str, dict[str, dict[str, MetricStat]]] = Field(default_factory=dict)
    by_policy_nonempty: dict[str, dict[str, dict[str, MetricStat]]] = Field(default_factory=dict)
    splits: dict[str, dict[str, int]] = Field(default_factory=dict)
    by_split: dict[str, dict[str, dict[str, MetricStat]]] = Field(default_factory=dict)
    by_split_nonempty: dict[str, dict[str, dict[str, MetricStat]]] = Field(default_factory=dict)
    by_split_consistency: dict[str, dict[str, dict[str, MetricStat]]] = Field(default_factory=dict)
    by_split_action_type_nonempty: dict[str, dict[str, dict[str, dict[str, MetricStat]]]] = Field(
        default_factory=dict
    )
    consistency: dict[str, dict[str, MetricStat]] = Field(default_factory=dict)
    num_consistency: int = 0
    by_split_determinism: dict[str, dict[str, dict[str, dict[str, MetricStat]]]] = Field(
        default_factory=dict
    )
    by_split_turn: dict[str, dict[str, dict[int, dict[str, MetricStat]]]] = Field(
        default_factory=dict
    )
    rows: list[EvalRow] = Field(default_factory=list)
