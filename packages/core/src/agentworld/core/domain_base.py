"""Base classes that declare every hook a caller may use, each with its default.

A domain plugin may subclass :class:`DomainBase` (and :class:`PolicyBase` for its policies):
every optional hook of :mod:`agentworld.core.protocols` is then present with a documented
default, and the plugin overrides what it knows better. A plugin that does not subclass keeps
working through the structural protocols: :func:`domain_hooks` wraps it in a
:class:`DomainBase` whose hooks call the plugin's own where the plugin has the capability
(tested with ``isinstance`` against the capability's protocol) and the default elsewhere. Call
sites use ``domain_hooks(domain).hook(...)``; nothing is found by ``getattr``, ``hasattr`` or
``inspect``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agentworld.core.errors import EnvironmentUnavailableError
from agentworld.core.options import AnyEnvOptions
from agentworld.core.protocols import (
    ConsistencyDomain,
    DeterminismDomain,
    DiscreteActionDomain,
    ExplainingDomain,
    FamilyDomain,
    MarkovDomain,
    OfflineDomain,
    OutputDomain,
    ResettableDomain,
    RewardingDomain,
    TextExplainingDomain,
    TranscriptRewardingDomain,
)
from agentworld.core.rollout import Outcome

if TYPE_CHECKING:
    from agentworld.core.protocols import Environment, Policy, TaskSampler
    from agentworld.core.types import Action, Episode, Observation, Step, Task


class DomainBase:
    """Every domain hook with its default. Subclasses set ``name`` and ``version`` and
    override ``system_prompt``, ``make_env``, ``tasks`` and ``policies`` at least.

    Defaults: no real environment (``make_env`` raises
    :class:`~agentworld.core.errors.EnvironmentUnavailableError`), no tasks, no policies,
    exact-match score, the action's tool name (else its first word) as its type and family,
    no rewards, the whole history, no rationale, the whole text as output, nothing
    deterministic, no consistency subset.
    """

    name: str = ""
    version: str = "0"
    defines_rewards: bool = False
    history_window: int | None = None
    has_environment: bool = True
    actions: list[str] = []  # noqa: RUF012 - read-only default: a discrete action set
    # What make_env takes from `collect --set` / a pipeline file (agentworld.core.options)
    env_options: type[BaseModel] = AnyEnvOptions

    # -- required ------------------------------------------------------------------------
    def system_prompt(self, task: Task | None) -> str:
        """The world-model system prompt describing this environment."""
        raise NotImplementedError(f"domain {self.name!r} defines no system_prompt")

    def make_env(self, **kwargs: Any) -> Environment:
        """A real environment. Raises :class:`EnvironmentUnavailableError` saying why none
        can run here (the default: the domain has none)."""
        raise EnvironmentUnavailableError(f"domain {self.name!r} has no real environment")

    def tasks(self) -> TaskSampler:
        """The domain's seeded task sampler."""
        raise NotImplementedError(f"domain {self.name!r} defines no task sampler")

    def policies(self) -> dict[str, Policy]:
        """Collection policies by name (default: none)."""
        return {}

    def score(self, predicted: str, reference: Observation) -> float:
        """Domain fidelity in [0, 1] (default: 1.0 for an exact match, else 0.0)."""
        return float(predicted == reference.text)

    def action_type(self, action: Action) -> str:
        """Coarse action category for fidelity reports (default: the tool name, else the
        first word of the text, else ``"other"``)."""
        if action.name:
            return action.name
        words = action.text.split()
        return words[0] if words else "other"

    def describe(self) -> dict[str, str]:
        """Facts for ``agentworld domains`` (default: none)."""
        return {}

    # -- optional, with defaults ---------------------------------------------------------
    def verify(self, observation: str, task: Task | None) -> tuple[float, bool] | None:
        """``(reward, terminated)`` of an observation text, ``None`` when unknown."""
        return None

    def verify_transcript(
        self, task: Task | None, transcript: Sequence[tuple[str, str]]
    ) -> tuple[float, bool] | None:
        """``(reward, terminated)`` of a whole episode's ``[(action, observation), ...]``
        transcript, ``None`` when unknown (default: unknown)."""
        return None

    def initial_observation(self, task: Task | None) -> str:
        """The observation at reset without a real step (default: none can be computed)."""
        raise EnvironmentUnavailableError(
            f"domain {self.name!r} cannot compute an initial observation without its environment"
        )

    def is_success(self, result: Any) -> bool:
        """Whether an episode result (``outcome``, ``last_reward``) is a success (default:
        it terminated with a positive reward)."""
        return result.outcome == Outcome.TERMINATED and (result.last_reward or 0) > 0

    def explain(
        self,
        step: Step,
        previous_state: dict[str, Any] | None,
        history: Sequence[tuple[str, str]] = (),
    ) -> str:
        """An SFT rationale from the real state change of ``step`` (default: none)."""
        return ""

    def explain_text(
        self, action: str, observation: str, history: Sequence[tuple[str, str]] = ()
    ) -> str:
        """The same rationale from the previous observation's text alone (default: none)."""
        return ""

    def output_text(self, observation: Observation) -> str:
        """The output part of an observation (default: all of it)."""
        return observation.text

    def empty_observation(self, previous: str) -> str:
        """What the environment shows after an action that outputs nothing (default: "")."""
        return ""

    def is_deterministic(self, action: Action, reference: Observation | None = None) -> bool:
        """Whether the next observation is a function of the history (default: no)."""
        return False

    def consistency_turns(self, episode: Episode) -> list[int]:
        """Turns whose observation depends on what the episode itself changed (default:
        none); fidelity reports score them as the in-episode consistency subset."""
        return []

    def command_families(self, action: Action) -> set[str]:
        """Families of an action for out-of-distribution hold-outs (default: its type)."""
        return {self.action_type(action)}


class PolicyBase:
    """A collection policy with its defaults: ``reset(seed)`` does nothing."""

    name: str = ""

    def reset(self, seed: int | None) -> None:
        """Start a new episode with ``seed`` (default: nothing to reset)."""

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The next action, or ``None`` to stop."""
        raise NotImplementedError(f"policy {self.name!r} defines no act")


class _Structural(DomainBase):
    """A :class:`DomainBase` over a domain that does not subclass it (see :func:`domain_hooks`)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name, self.version = inner.name, inner.version
        if isinstance(inner, RewardingDomain):
            self.defines_rewards = bool(inner.defines_rewards)
        if isinstance(inner, MarkovDomain):
            self.history_window = inner.history_window
        if isinstance(inner, OfflineDomain):
            self.has_environment = bool(inner.has_environment)
        if isinstance(inner, DiscreteActionDomain):
            self.actions = list(inner.actions)

    def system_prompt(self, task: Task | None) -> str:
        return self.inner.system_prompt(task)

    def make_env(self, **kwargs: Any) -> Environment:
        return self.inner.make_env(**kwargs)

    def tasks(self) -> TaskSampler:
        return self.inner.tasks()

    def policies(self) -> dict[str, Policy]:
        return self.inner.policies()

    def score(self, predicted: str, reference: Observation) -> float:
        return self.inner.score(predicted, reference)

    def action_type(self, action: Action) -> str:
        return str(self.inner.action_type(action))

    def describe(self) -> dict[str, str]:
        return self.inner.describe()

    def verify(self, observation: str, task: Task | None) -> tuple[float, bool] | None:
        if isinstance(self.inner, RewardingDomain):
            return self.inner.verify(observation, task)
        return None

    def verify_transcript(
        self, task: Task | None, transcript: Sequence[tuple[str, str]]
    ) -> tuple[float, bool] | None:
        if isinstance(self.inner, TranscriptRewardingDomain):
            return self.inner.verify_transcript(task, transcript)
        return None

    def initial_observation(self, task: Task | None) -> str:
        if isinstance(self.inner, ResettableDomain):
            return self.inner.initial_observation(task)
        return super().initial_observation(task)

    def is_success(self, result: Any) -> bool:
        if isinstance(self.inner, DiscreteActionDomain):
            return self.inner.is_success(result)
        return super().is_success(result)

    def explain(self, step, previous_state, history=()):  # type: ignore[no-untyped-def]
        if isinstance(self.inner, ExplainingDomain):
            return self.inner.explain(step, previous_state, history=history)
        return ""

    def explain_text(self, action, observation, history=()):  # type: ignore[no-untyped-def]
        if isinstance(self.inner, TextExplainingDomain):
            return self.inner.explain_text(action, observation, history=history)
        return ""

    def output_text(self, observation: Observation) -> str:
        if isinstance(self.inner, OutputDomain):
            return self.inner.output_text(observation)
        return observation.text

    def empty_observation(self, previous: str) -> str:
        if isinstance(self.inner, OutputDomain):
            return self.inner.empty_observation(previous)
        return ""

    def is_deterministic(self, action: Action, reference: Observation | None = None) -> bool:
        if isinstance(self.inner, DeterminismDomain):
            return self.inner.is_deterministic(action, reference)
        return False

    def consistency_turns(self, episode: Episode) -> list[int]:
        if isinstance(self.inner, ConsistencyDomain):
            return list(self.inner.consistency_turns(episode))
        return []

    def command_families(self, action: Action) -> set[str]:
        if isinstance(self.inner, FamilyDomain):
            return set(self.inner.command_families(action))
        return {self.action_type(action)}


def domain_hooks(domain: Any) -> DomainBase:
    """``domain`` itself when it subclasses :class:`DomainBase`, else a :class:`DomainBase`
    that calls its capabilities and defaults the rest."""
    return domain if isinstance(domain, DomainBase) else _Structural(domain)
