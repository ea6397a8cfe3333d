"""Interfaces implemented by plugins.

These are structural (``typing.Protocol``): a third-party class satisfies them
by shape, without importing or subclassing anything from agentworld. The world model's
optional capabilities (per-episode state, card, sessions) live in
:mod:`agentworld.core.world_models` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

# Re-exported ("X as X"): the world model's capabilities were first declared here.
from agentworld.core.world_models import (
    WORLD_MODEL_CAPABILITIES as WORLD_MODEL_CAPABILITIES,
    CardedWorldModel as CardedWorldModel,
    EpisodicWorldModel as EpisodicWorldModel,
    SessionWorldModel as SessionWorldModel,
    WorldModelSession as WorldModelSession,
)

if TYPE_CHECKING:  # annotations only: the plugin manager imports this module without pydantic
    from agentworld.core.types import Action, Episode, Observation, Prediction, Step, Task


@runtime_checkable
class Environment(Protocol):
    """A real (or simulated) environment with Gymnasium's call order.

    ``reset`` returns ``(observation, info)``; ``step`` returns
    ``(observation, reward, terminated, truncated, info)``
    (Gymnasium 1.x ``Env`` API). ``step`` always receives an :class:`Action` (a Gymnasium
    env whose action space is ``Text`` is wrapped in :class:`agentworld.core.textenv.TextActions`
    once, by its domain). The observation is an :class:`Observation` or, as real
    ``gymnasium.Env`` domains return it, an :class:`~agentworld.core.types.ObservationText`
    (a ``str`` with the public ``state``). Privileged state (never shown to the agent) comes
    from :class:`PrivilegedEnvironment`'s ``privileged_state()``, which collection records.
    :func:`agentworld.core.rollout.rollout` plays policies in any environment of this shape.
    """

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation | str, dict[str, Any]]: ...

    def step(self, action: Action) -> tuple[Observation | str, float, bool, bool, dict[str, Any]]: ...

    def close(self) -> None: ...


@runtime_checkable
class PromptingEnvironment(Protocol):
    """An environment that knows its episode's world-model system prompt better than its
    domain can from the task alone (the tools of the server it was started with):
    ``system_prompt(task) -> str``, asked after ``reset``. Collection records it."""

    def system_prompt(self, task: Task | None) -> str: ...


@runtime_checkable
class VectorEnvironment(Protocol):
    """A batch of environments stepped together (Gymnasium's ``VectorEnv``: ``num_envs``,
    ``reset(seed=...)``, ``step(actions [num_envs])``); rollouts play it sub-environment by
    sub-environment (:mod:`agentworld.core.vector_rollout`)."""

    num_envs: int


@runtime_checkable
class Policy(Protocol):
    """Chooses the next action from the episode so far. Returns ``None`` to stop."""

    name: str

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None: ...


class TaskSampler(Protocol):
    """Deterministic task generator: same seed, same tasks."""

    def sample(self, n: int, *, seed: int) -> list[Task]: ...


@runtime_checkable
class KindedTaskSampler(Protocol):
    """A task sampler that lists the task kinds it draws (``kinds``), so a hold-out of task
    kinds (``ood_task_kinds``) can be checked against it."""

    kinds: Sequence[str]


@runtime_checkable
class ResettablePolicy(Protocol):
    """A policy with per-episode state: ``reset(seed)`` is called before each episode."""

    def reset(self, seed: int | None) -> None: ...


@runtime_checkable
class PrivilegedEnvironment(Protocol):
    """An environment that reports the state behind its last observation, never shown to the
    agent (a file tree, a database): ``privileged_state() -> dict | None``. Collection records
    it; checks and scorers read it."""

    def privileged_state(self) -> dict[str, Any] | None: ...


@runtime_checkable
class Domain(Protocol):
    """Everything the framework needs to know about one agent environment.

    Attributes:
        name: Registry name (``"terminal"``).
        version: Environment version string, stored in episode metadata.

    Optional capabilities are the small protocols below (:data:`DOMAIN_CAPABILITIES`): a
    domain has one when it has all of that protocol's members, and callers test it with
    ``isinstance(domain, RewardingDomain)``. The plugin manager checks a registered domain
    once, when it is first built: a missing required member, or a capability with only some
    of its members, is a :class:`~agentworld.core.plugins.PluginContractError` naming them.
    """

    name: str
    version: str

    def system_prompt(self, task: Task | None) -> str:
        """The world-model system prompt describing this environment."""
        ...

    def make_env(self, **kwargs: Any) -> Environment:
        """A real environment, or raises ``RuntimeError`` saying why none can run here."""
        ...

    def tasks(self) -> TaskSampler: ...

    def policies(self) -> dict[str, Policy]:
        """Collection policies by name (``"scripted"``, ``"random"``, ...)."""
        ...

    def score(self, predicted: str, reference: Observation) -> float:
        """Domain fidelity score in [0, 1] of a predicted observation text."""
        ...

    def action_type(self, action: Action) -> str:
        """Coarse action category used to break down fidelity reports (``"ls"``)."""
        ...

    def describe(self) -> dict[str, str]:
        """Human-readable facts for ``agentworld domains`` (e.g. the sandbox in use)."""
        ...


@runtime_checkable
class RewardFn(Protocol):
    """A batched fidelity reward in [0, 1].

    ``__call__(predictions, references, contexts)`` takes three sequences of
    equal length ``[batch]`` and returns ``[batch]`` floats. ``contexts[i]``
    is a dict with at least ``domain`` (a :class:`Domain` or ``None``) and
    ``reference`` (the real :class:`Observation`).
    """

    name: str

    def __call__(
        self,
        predictions: Sequence[str],
        references: Sequence[str],
        contexts: Sequence[dict[str, Any]],
    ) -> list[float]: ...


@runtime_checkable
class WorldModel(Protocol):
    """Batched next-observation prediction.

    ``predict(requests)`` takes ``[batch]`` chat message lists (each a list of
    ``{"role", "content"}`` dicts ending with the user's action) and returns
    ``[batch]`` :class:`Prediction`.
    """

    def predict(
        self, requests: Sequence[list[dict[str, str]]], *, max_new_tokens: int | None = None
    ) -> list[Prediction]: ...


@runtime_checkable
class Trainer(Protocol):
    """A training stage (``cpt``, ``sft``, ...).

    ``train(train_episodes, config) -> output_dir`` where ``config`` is the
    stage's dict of options (model path or preset, output dir, steps, ...). Optional
    capabilities: :class:`ConfigurableTrainer`, :class:`ExperienceTrainer`
    (:data:`TRAINER_CAPABILITIES`). The plugin manager builds a fresh trainer on every
    ``get_trainer`` call (a trainer may keep state between its own calls).
    """

    name: str

    def train(self, episodes: Sequence[Episode], config: dict[str, Any]) -> str: ...


@runtime_checkable
class SimBackend(Protocol):
    """Loads a world model from a checkpoint and wraps it as a simulated environment."""

    name: str

    def load(self, path: str, **options: Any) -> WorldModel:
        """The world model of checkpoint ``path`` (``options``: device, decoding, ...)."""
        ...

    def make_env(
        self, world_model: WorldModel, domain: Domain | str | None = None, **options: Any
    ) -> Any:
        """A Gymnasium ``Env`` whose ``step(action_text)`` is a prediction of ``world_model``;
        ``domain`` (an object or a registered name) gives prompts, tasks and rewards."""
        ...


# -- optional capabilities ------------------------------------------------------------------------
# Each is a small runtime-checkable protocol: an object has the capability when it has every
# member, and a registered plugin with only some of them fails its contract check. The tables at
# the end list them per plugin kind; docs/plugins.md documents each (a test keeps both in step).


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


#: The protocol a registered plugin of each kind must satisfy.
KIND_PROTOCOLS: dict[str, type] = {
    "domain": Domain,
    "reward": RewardFn,
    "trainer": Trainer,
    "sim_backend": SimBackend,
}
DOMAIN_CAPABILITIES: tuple[type, ...] = (
    RewardingDomain,
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
)
TRAINER_CAPABILITIES: tuple[type, ...] = (ConfigurableTrainer, ExperienceTrainer)
REWARD_CAPABILITIES: tuple[type, ...] = (ModelBasedReward, ComponentReward)
#: Optional capabilities checked per plugin kind (all or none of a capability's members).
CAPABILITIES: dict[str, tuple[type, ...]] = {
    "domain": DOMAIN_CAPABILITIES,
    "trainer": TRAINER_CAPABILITIES,
    "reward": REWARD_CAPABILITIES,
}


def protocol_members(protocol: type) -> list[str]:
    """The members a protocol class declares itself (annotations, then methods), in order."""
    own = dict(vars(protocol))
    names = list(own.get("__annotations__", {}))
    names += [k for k, v in own.items() if callable(v) and not k.startswith("_")]
    if "__call__" in own:
        names.append("__call__")
    return names


def missing_members(obj: Any, protocol: type) -> list[str]:
    """Members of ``protocol`` that ``obj`` lacks (a declared method that is not callable
    counts as missing)."""
    own = vars(protocol)
    missing = []
    for member in protocol_members(protocol):
        value = getattr(obj, member, _MISSING)
        if value is _MISSING or (callable(own.get(member)) and not callable(value)):
            missing.append(member)
    return missing


_MISSING = object()
