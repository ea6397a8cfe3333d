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

# Re-exported: the optional capabilities and the contract helpers were first declared here.
from agentworld.core.capabilities import (  # noqa: F401
    RewardingDomain as RewardingDomain,
    TranscriptRewardingDomain as TranscriptRewardingDomain,
    MarkovDomain as MarkovDomain,
    ResettableDomain as ResettableDomain,
    DiscreteActionDomain as DiscreteActionDomain,
    ExplainingDomain as ExplainingDomain,
    TextExplainingDomain as TextExplainingDomain,
    ConsistencyDomain as ConsistencyDomain,
    FamilyDomain as FamilyDomain,
    OutputDomain as OutputDomain,
    DeterminismDomain as DeterminismDomain,
    OfflineDomain as OfflineDomain,
    ModelBasedReward as ModelBasedReward,
    ComponentReward as ComponentReward,
    ConfigurableTrainer as ConfigurableTrainer,
    ExperienceTrainer as ExperienceTrainer,
    CAPABILITIES as CAPABILITIES,
    DOMAIN_CAPABILITIES as DOMAIN_CAPABILITIES,
    REWARD_CAPABILITIES as REWARD_CAPABILITIES,
    TRAINER_CAPABILITIES as TRAINER_CAPABILITIES,
)
from agentworld.core.contracts import (  # noqa: F401
    missing_members as missing_members,
    protocol_members as protocol_members,
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
class EnvironmentBatch(Protocol):
    """``len(batch)`` environments that are reset and stepped a batch at a time, wherever they
    live: in this process (:class:`agentworld.core.env_batch.LocalEnvironments`, threads) or on
    Ray actors (:class:`agentworld.core.ray_envs.RayEnvironments`). Environment ``i`` of the
    batch has Gymnasium's call order; :func:`agentworld.core.rollout.rollout` plays a batch as
    it plays a list of environments.

    ``reset_batch(indices, seeds, options)`` returns ``[len(indices)]`` ``(observation, info)``;
    ``step_batch(indices, actions)`` returns ``[len(indices)]`` ``(observation, reward,
    terminated, truncated, info)``, each in the order of ``indices``. Environments outside
    ``indices`` are left as they are. ``close()`` closes every environment.
    """

    def __len__(self) -> int: ...

    def reset_batch(
        self,
        indices: Sequence[int],
        seeds: Sequence[int | None],
        options: Sequence[dict[str, Any] | None],
    ) -> list[tuple[Any, dict[str, Any]]]: ...

    def step_batch(
        self, indices: Sequence[int], actions: Sequence[Any]
    ) -> list[tuple[Any, float, bool, bool, dict[str, Any]]]: ...

    def close(self) -> None: ...


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
class TaskingPolicy(Protocol):
    """A policy that brings its own task: ``task(seed) -> Task`` is the task (set-up files,
    instruction) of the episode it plays with ``seed``, drawn instead of the domain's task
    sampler (:func:`agentworld.core.collect.collect`). ``num_tasks`` is how many distinct tasks
    it has (``None``: unbounded); a finite policy cycles through them by seed (``seed %
    num_tasks``), so a collection of ``num_tasks`` consecutive seeds plays each once (an
    evaluation set such as the terminal's hand-written sessions)."""

    num_tasks: int | None

    def task(self, seed: int) -> Task: ...


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

    Optional capabilities are the small protocols of :data:`DOMAIN_CAPABILITIES`: a domain
    that does not subclass :class:`~agentworld.core.domain_base.DomainBase` has one when it
    has all of that protocol's members. Callers never test them with ``isinstance`` (a
    DomainBase subclass has every member): they ask
    :func:`~agentworld.core.domain_base.domain_hooks`, which adapts such a domain. The plugin
    manager checks a registered domain once, when it is first built: a missing required
    member, or a capability with only some of its members, is a
    :class:`~agentworld.core.plugins.PluginContractError` naming them.
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


#: The protocol a registered plugin of each kind must satisfy.
KIND_PROTOCOLS: dict[str, type] = {
    "domain": Domain,
    "reward": RewardFn,
    "trainer": Trainer,
    "sim_backend": SimBackend,
}
