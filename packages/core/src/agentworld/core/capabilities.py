"""Optional capabilities of plugins, each a small runtime-checkable protocol.

The domain capabilities adapt domains that do not subclass
:class:`~agentworld.core.domain_base.DomainBase` (whose optional hooks answer ``None`` when
absent); only :func:`~agentworld.core.domain_base.domain_hooks` tests them with ``isinstance``.

An object has a capability when it has every member; a registered plugin with only some of them
fails its contract check (:mod:`agentworld.core.contracts`). The tables at the end list them per
plugin kind; docs/plugins.md documents each (a test keeps both in step). Re-exported by
:mod:`agentworld.core.protocols`, where they were first declared.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: the plugin manager imports this module without pydantic
    from agentworld.core.types import Action, Episode, Observation, Step, Task


@runtime_checkable
class RewardingDomain(Protocol):
    """A domain whose environment gives rewards a world model can predict.

    ``defines_rewards``: when true, the world model's answers carry the reward footer after
    the observation (:mod:`agentworld.core.formats`). ``verify(observation, task)``: the
    domain's own ``(reward, terminated)`` for an observation text, ``None`` when it cannot
    tell; a simulator's ``reward_source="verifier"`` uses it instead of the footer.
    """

    defines_rewards: bool

    def verify(self, observation: str, task: Task | None) -> tuple[float, bool] | None: ...


@runtime_checkable
class TranscriptRewardingDomain(Protocol):
    """A domain that can reward a whole (simulated) episode from its transcript alone:
    ``verify_transcript(task, transcript) -> (reward, terminated) | None``, where
    ``transcript`` is ``[(action text, observation text), ...]`` oldest first, the
    observations as the simulator predicted them; ``None`` when the task's check cannot be
    decided from the transcript. Agents trained in a simulator use it as a reward source
    beside the world model's own footer (:mod:`agentworld.trainers.agents.simrl.rewards`)."""

    def verify_transcript(
        self, task: Task | None, transcript: Sequence[tuple[str, str]]
    ) -> tuple[float, bool] | None: ...


@runtime_checkable
class MarkovDomain(Protocol):
    """A domain whose world model sees only the last ``history_window`` turns (``1`` when the
    observation is the whole state; ``None``: the whole history)."""

    history_window: int | None


@runtime_checkable
class ResettableDomain(Protocol):
    """A domain that computes the observation at reset for a task without a real step
    (``initial_observation(task) -> str``), so simulated episodes can start without the real
    environment."""

    def initial_observation(self, task: Task | None) -> str: ...


@runtime_checkable
class DiscreteActionDomain(Protocol):
    """A domain with a small set of action words (``actions``, what tabular agents choose
    from) and its own episode success test ``is_success(result) -> bool``, where ``result``
    has ``outcome`` (``"terminated"``/``"truncated"``/...) and ``last_reward``."""

    actions: list[str]

    def is_success(self, result: Any) -> bool: ...


@runtime_checkable
class ExplainingDomain(Protocol):
    """A domain that writes an SFT rationale from the real state change of a step:
    ``explain(step, previous_state, history) -> str`` (``previous_state``: the previous
    observation's ``state``, ``None`` at the first step; ``history``: ``(action text,
    observation text before it)`` of the earlier steps, oldest first)."""

    def explain(
        self,
        step: Step,
        previous_state: dict[str, Any] | None,
        history: Sequence[tuple[str, str]] = (),
    ) -> str: ...


@runtime_checkable
class TextExplainingDomain(Protocol):
    """A domain that writes the same rationale from the previous observation's text alone:
    ``explain_text(action, observation, history) -> str``. A simulator of a checkpoint trained
    with ``reasoning="domain"`` writes it into the answer and lets the model continue with the
    observation block."""

    def explain_text(
        self, action: str, observation: str, history: Sequence[tuple[str, str]] = ()
    ) -> str: ...


@runtime_checkable
class ConsistencyDomain(Protocol):
    """A domain that knows which turns of an episode depend on what the episode itself
    changed: ``consistency_turns(episode) -> list[int]`` (fidelity reports score them as the
    in-episode consistency subset)."""

    def consistency_turns(self, episode: Episode) -> list[int]: ...


@runtime_checkable
class FamilyDomain(Protocol):
    """A domain that groups actions into families for out-of-distribution hold-outs:
    ``command_families(action) -> set[str]`` (``ood_commands`` holds out episodes using
    any of them)."""

    def command_families(self, action: Action) -> set[str]: ...


@runtime_checkable
class OutputDomain(Protocol):
    """A domain whose observation is an output plus fixed chrome (the terminal's prompt line).

    ``output_text(observation) -> str``: the output part alone (fidelity reports split
    transitions by whether it is empty). ``empty_observation(previous_text) -> str``: what the
    environment shows after an action that outputs nothing (the ``empty`` baseline).
    """

    def output_text(self, observation: Observation) -> str: ...

    def empty_observation(self, previous: str) -> str: ...


@runtime_checkable
class DeterminismDomain(Protocol):
    """A domain that knows when the real next observation is a function of the history:
    ``is_deterministic(action, reference) -> bool`` (``hybrid`` scores such content by rules
    alone)."""

    def is_deterministic(self, action: Action, reference: Observation | None = None) -> bool: ...


@runtime_checkable
class ConfiguringDomain(Protocol):
    """A domain whose tasks and policies follow its environment options:
    ``for_environment(options) -> domain | None`` is the domain to collect with for the parsed
    ``collect --set`` values (a user's corpus or shell history brings its own tasks and
    policies), ``None`` when they change neither."""

    def for_environment(self, options: dict[str, Any]) -> Any: ...


@runtime_checkable
class OfflineDomain(Protocol):
    """A domain that may have no real environment on this machine: ``has_environment``
    false means it is data-only (trained and measured from recorded trajectories, such as
    AgentWorldBench rows) and ``make_env`` raises ``RuntimeError`` saying so."""

    has_environment: bool


@runtime_checkable
class ModelBasedReward(Protocol):
    """A reward computed by a model (an embedding model, an LLM judge) rather than by rules:
    ``model_based`` true. ``hybrid`` scores content a domain marks deterministic by its rule
    components alone."""

    model_based: bool


@runtime_checkable
class ComponentReward(Protocol):
    """A reward that reports how its score was made: ``evaluate(predictions, references,
    contexts)`` returns an object with ``scores`` (``[batch]``) and ``components`` (name ->
    ``[batch]`` scores, ``None`` where a component did not run); ``rl`` logs the components."""

    def evaluate(
        self,
        predictions: Sequence[str | None],
        references: Sequence[str],
        contexts: Sequence[dict[str, Any]],
    ) -> Any: ...


@runtime_checkable
class ConfigurableTrainer(Protocol):
    """A trainer that lists and checks its options: ``options()`` gives ``(key, default,
    description)`` rows (``agentworld train STAGE --options``); ``check_options(config)`` raises
    ``ValueError`` for options ``train`` would refuse (a pipeline calls it for every stage
    before the first training stage runs)."""

    def options(self) -> list[tuple[str, str, str]]: ...

    def check_options(self, config: dict[str, Any]) -> None: ...


@runtime_checkable
class ExperienceTrainer(Protocol):
    """A trainer that gathers its own experience: ``needs_data`` / ``needs_model`` false tell
    the CLI that ``--data`` and ``--model`` are optional."""

    needs_data: bool
    needs_model: bool


DOMAIN_CAPABILITIES: tuple[type, ...] = (
    RewardingDomain,
    TranscriptRewardingDomain,
    MarkovDomain,
    ResettableDomain,
    DiscreteActionDomain,
    ExplainingDomain,
    TextExplainingDomain,
    OutputDomain,
    DeterminismDomain,
    OfflineDomain,
    ConsistencyDomain,
    FamilyDomain,
    ConfiguringDomain,
)
TRAINER_CAPABILITIES: tuple[type, ...] = (ConfigurableTrainer, ExperienceTrainer)
REWARD_CAPABILITIES: tuple[type, ...] = (ModelBasedReward, ComponentReward)
#: Optional capabilities checked per plugin kind (all or none of a capability's members).
CAPABILITIES: dict[str, tuple[type, ...]] = {
    "domain": DOMAIN_CAPABILITIES,
    "trainer": TRAINER_CAPABILITIES,
    "reward": REWARD_CAPABILITIES,
}
