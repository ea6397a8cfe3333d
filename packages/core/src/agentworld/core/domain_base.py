"""The domain contract as base classes: required hooks abstract, optional ones answering ``None``.

A domain plugin subclasses :class:`DomainBase` (and :class:`PolicyBase` for its policies). The
required hooks (``system_prompt``, ``tasks``, ``policies``, and ``make_env`` unless the class
sets ``has_environment = False``) are abstract: a subclass that forgets one cannot be built
(:class:`MissingHooksError`, a ``TypeError``, naming them), as an ``abc`` class cannot. Every
optional feature is a value or a hook whose default says "absent": ``actions`` is ``None``,
``initial_observation``, ``explain``, ``explain_text``, ``verify``, ``verify_transcript`` and
``is_deterministic`` return ``None``; :attr:`DomainBase.has_verifier`,
:attr:`DomainBase.has_rationales` and :attr:`DomainBase.has_text_rationales` say whether the
domain overrides ``verify``, ``explain`` or ``explain_text`` (a subclass may set them).

Call sites ask one place, ``domain_hooks(domain)``: the domain itself when it subclasses
:class:`DomainBase`; for a plugin that does not (the structural protocols of
:mod:`agentworld.core.protocols`), an adapter whose hooks call the plugin's own where it has the
capability and answer "absent" elsewhere. Nothing asks ``isinstance(domain, <Capability>)``
outside this module (a test keeps it so); nothing is found by ``getattr``, ``hasattr`` or
``inspect``.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agentworld.core.capabilities import ConfiguringDomain
from agentworld.core.contracts import MISSING, member
from agentworld.core.errors import EnvironmentUnavailableError, MissingHooksError
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


class _ContractMeta(abc.ABCMeta):
    """``abc`` with one condition: ``make_env`` is required only while ``has_environment``
    (the nearest class that sets it decides, so a subclass may set it back to True)."""

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kw: Any):
        cls = super().__new__(mcls, name, bases, namespace, **kw)
        if _nearest(cls, "has_environment", True) is False:
            cls.__abstractmethods__ = frozenset(cls.__abstractmethods__ - {"make_env"})
        elif _BASE_MAKE_ENV and _nearest(cls, "make_env", None) is _BASE_MAKE_ENV[0]:
            cls.__abstractmethods__ = frozenset(cls.__abstractmethods__ | {"make_env"})
        return cls


def _nearest(cls: type, name: str, default: Any) -> Any:
    """The value the nearest class of ``cls``'s MRO sets for ``name`` in its own namespace."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return default


_BASE_MAKE_ENV: list[Any] = []  # DomainBase's abstract make_env, once it exists


class _Checked:
    """Refuses to build a class with abstract hooks, naming them (:class:`MissingHooksError`)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        missing = sorted(cls.__abstractmethods__)  # type: ignore[attr-defined]
        if missing:
            base = next(k.__name__ for k in cls.__mro__ if k in (DomainBase, PolicyBase))
            hint = (" (a domain without a real environment sets has_environment = False "
                    "instead of defining make_env)") if "make_env" in missing else ""
            raise MissingHooksError(
                f"{cls.__module__}.{cls.__qualname__} does not implement {', '.join(missing)}, "
                f"required of a {base} subclass{hint}; define "
                f"{'it' if len(missing) == 1 else 'them'} (see docs/plugins.md)"
            )
        return super().__new__(cls)


class DomainBase(_Checked, metaclass=_ContractMeta):
    """A domain: set ``name`` and ``version``; implement ``system_prompt``, ``tasks``,
    ``policies`` and ``make_env`` (or set ``has_environment = False``); override what else
    you know.

    Defaults: exact-match score, the tool name (else the first word) as action type and
    family, no facts, no rewards, the whole history, and every optional hook absent.
    """

    name: str
    version: str
    #: The world model's answers carry the reward footer (:mod:`agentworld.core.formats`).
    defines_rewards: bool = False
    #: Turns the world model sees (``None``: the whole history; ``1``: Markov).
    history_window: int | None = None
    #: False for a data-only domain: ``make_env`` raises (and need not be defined).
    has_environment: bool = True
    #: The small set of action words tabular agents choose from (``None``: free text).
    actions: list[str] | None = None
    #: What ``make_env`` takes from ``collect --set`` and a pipeline file, a pydantic class
    #: (:mod:`agentworld.core.options`; the default passes every key through).
    env_options: type[BaseModel] = AnyEnvOptions

    # -- required --------------------------------------------------------------------------
    @abc.abstractmethod
    def system_prompt(self, task: Task | None) -> str:
        """The world-model system prompt describing this environment."""

    @abc.abstractmethod
    def make_env(self, **kwargs: Any) -> Environment:
        """A real environment. Raises :class:`EnvironmentUnavailableError` saying why none
        can run here (what a domain with ``has_environment = False`` inherits)."""
        raise EnvironmentUnavailableError(f"domain {self.name!r} has no real environment")

    @abc.abstractmethod
    def tasks(self) -> TaskSampler:
        """The domain's seeded task sampler (``sample(n, *, seed) -> [n] Task``)."""

    @abc.abstractmethod
    def policies(self) -> dict[str, Policy]:
        """Collection policies by name (``{}`` for a domain that collects nothing)."""

    # -- with defaults ---------------------------------------------------------------------
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

    def is_success(self, result: Any) -> bool:
        """Whether an episode result (``outcome``, ``last_reward``) is a success (default:
        it terminated with a positive reward)."""
        return result.outcome == Outcome.TERMINATED and (result.last_reward or 0) > 0

    def output_text(self, observation: Observation) -> str:
        """The output part of an observation (default: all of it)."""
        return observation.text

    def empty_observation(self, previous: str) -> str:
        """What the environment shows after an action that outputs nothing (default: "")."""
        return ""

    def consistency_turns(self, episode: Episode) -> list[int]:
        """Turns whose observation depends on what the episode itself changed (default:
        none); fidelity reports score them as the in-episode consistency subset."""
        return []

    def command_families(self, action: Action) -> set[str]:
        """Families of an action for out-of-distribution hold-outs (default: its type)."""
        return {self.action_type(action)}

    # -- optional: None when absent --------------------------------------------------------
    def verify(self, observation: str, task: Task | None) -> tuple[float, bool] | None:
        """``(reward, terminated)`` of an observation text, ``None`` when unknown (default:
        always unknown; :attr:`has_verifier` is false)."""
        return None

    def verify_transcript(
        self, task: Task | None, transcript: Sequence[tuple[str, str]]
    ) -> tuple[float, bool] | None:
        """``(reward, terminated)`` of a whole episode's ``[(action, observation), ...]``
        transcript, ``None`` when unknown (default: unknown)."""
        return None

    def initial_observation(self, task: Task | None) -> str | None:
        """The observation at reset without a real step; ``None`` when it cannot be
        computed (default; a simulated episode then needs one given)."""
        return None

    def explain(
        self,
        step: Step,
        previous_state: dict[str, Any] | None,
        history: Sequence[tuple[str, str]] = (),
    ) -> str | None:
        """An SFT rationale from the real state change of ``step``; ``None``: no rationales
        (default; :attr:`has_rationales` is false)."""
        return None

    def explain_text(
        self, action: str, observation: str, history: Sequence[tuple[str, str]] = ()
    ) -> str | None:
        """The same rationale from the previous observation's text alone (what a simulator
        has); ``None``: none (default; :attr:`has_text_rationales` is false)."""
        return None

    def is_deterministic(self, action: Action, reference: Observation | None = None) -> bool | None:
        """Whether the next observation is a function of the history; ``None``: the domain
        does not say (default; ``hybrid`` then uses its configured action types)."""
        return None

    def for_environment(self, options: dict[str, Any]) -> Any:
        """The domain whose tasks and policies fit the environment that ``options`` (parsed
        ``collect --set`` values, :mod:`agentworld.core.options`) make: a user's corpus or
        shell history brings its own tasks and policies. ``None``: the options change neither
        (default); collection then uses this domain."""
        return None

    @property
    def has_verifier(self) -> bool:
        """Whether ``verify`` can answer (default: the class overrides it)."""
        return type(self).verify is not DomainBase.verify

    @property
    def has_rationales(self) -> bool:
        """Whether ``explain`` writes rationales (default: the class overrides it)."""
        return type(self).explain is not DomainBase.explain

    @property
    def has_text_rationales(self) -> bool:
        """Whether ``explain_text`` writes rationales (default: the class overrides it)."""
        return type(self).explain_text is not DomainBase.explain_text


_BASE_MAKE_ENV.append(vars(DomainBase)["make_env"])


class PolicyBase(_Checked, metaclass=_ContractMeta):
    """A collection policy: set ``name``, implement ``act``; ``reset(seed)`` does nothing."""

    name: str = ""

    def reset(self, seed: int | None) -> None:
        """Start a new episode with ``seed`` (default: nothing to reset)."""

    @abc.abstractmethod
    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The next action, or ``None`` to stop; ``history`` is the initial observation,
        then action and observation alternately."""


class _Structural(DomainBase):
    """A :class:`DomainBase` over a domain that does not subclass it (see :func:`domain_hooks`)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        # a partial domain (only what one caller needs) is adapted too: name and version may lack
        self.name, self.version = (str(member(inner, k)) if member(inner, k) is not MISSING
                                   else "" for k in ("name", "version"))
        self.defines_rewards = isinstance(inner, RewardingDomain) and bool(inner.defines_rewards)
        self.history_window = inner.history_window if isinstance(inner, MarkovDomain) else None
        self.has_environment = not isinstance(inner, OfflineDomain) or bool(inner.has_environment)
        self.actions = list(inner.actions) if isinstance(inner, DiscreteActionDomain) else None

    @property
    def has_verifier(self) -> bool:
        return isinstance(self.inner, RewardingDomain)

    @property
    def has_rationales(self) -> bool:
        return isinstance(self.inner, ExplainingDomain)

    @property
    def has_text_rationales(self) -> bool:
        return isinstance(self.inner, TextExplainingDomain)

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
        return self.inner.verify(observation, task) if self.has_verifier else None

    def verify_transcript(
        self, task: Task | None, transcript: Sequence[tuple[str, str]]
    ) -> tuple[float, bool] | None:
        if isinstance(self.inner, TranscriptRewardingDomain):
            return self.inner.verify_transcript(task, transcript)
        return None

    def initial_observation(self, task: Task | None) -> str | None:
        if isinstance(self.inner, ResettableDomain):
            return self.inner.initial_observation(task)
        return None

    def is_success(self, result: Any) -> bool:
        if isinstance(self.inner, DiscreteActionDomain):
            return bool(self.inner.is_success(result))
        return super().is_success(result)

    def explain(self, step, previous_state, history=()):  # type: ignore[no-untyped-def]
        if self.has_rationales:
            return self.inner.explain(step, previous_state, history=history)
        return None

    def explain_text(self, action, observation, history=()):  # type: ignore[no-untyped-def]
        if self.has_text_rationales:
            return self.inner.explain_text(action, observation, history=history)
        return None

    def output_text(self, observation: Observation) -> str:
        if isinstance(self.inner, OutputDomain):
            return self.inner.output_text(observation)
        return observation.text

    def empty_observation(self, previous: str) -> str:
        if isinstance(self.inner, OutputDomain):
            return self.inner.empty_observation(previous)
        return ""

    def is_deterministic(self, action: Action, reference: Observation | None = None) -> bool | None:
        if isinstance(self.inner, DeterminismDomain):
            return bool(self.inner.is_deterministic(action, reference))
        return None

    def consistency_turns(self, episode: Episode) -> list[int]:
        if isinstance(self.inner, ConsistencyDomain):
            return list(self.inner.consistency_turns(episode))
        return []

    def for_environment(self, options: dict[str, Any]) -> Any:
        if isinstance(self.inner, ConfiguringDomain):
            return self.inner.for_environment(options)
        return None

    def command_families(self, action: Action) -> set[str]:
        if isinstance(self.inner, FamilyDomain):
            return set(self.inner.command_families(action))
        return {self.action_type(action)}


def domain_hooks(domain: Any) -> DomainBase:
    """``domain`` itself when it subclasses :class:`DomainBase`, else a :class:`DomainBase`
    that calls its capabilities and answers "absent" for the rest. The one place callers ask
    what a domain can do."""
    return domain if isinstance(domain, DomainBase) else _Structural(domain)
