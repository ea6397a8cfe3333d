"""Interfaces implemented by plugins.

These are structural (``typing.Protocol``): a third-party class satisfies them
by shape, without importing or subclassing anything from agentworld.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from agentworld.core.types import Action, Episode, Observation, Prediction, Task


@runtime_checkable
class Environment(Protocol):
    """A real (or simulated) environment with Gymnasium's call order.

    ``reset`` returns ``(observation, info)``; ``step`` returns
    ``(observation, reward, terminated, truncated, info)``
    (Gymnasium 1.x ``Env`` API).
    """

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]: ...

    def step(self, action: Action) -> tuple[Observation, float, bool, bool, dict[str, Any]]: ...

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
class Domain(Protocol):
    """Everything the framework needs to know about one agent environment.

    Attributes:
        name: Registry name (``"terminal"``).
        version: Environment version string, stored in episode metadata.

    Optional members, found by duck typing (``getattr`` with these defaults):

    - ``defines_rewards: bool = False``: the world model predicts the next reward and
      termination in a footer after the observation (:mod:`agentworld.core.formats`).
    - ``history_window: int | None = None``: turns of history the world model sees
      (``1`` for Markov domains whose observation is the whole state).
    - ``verify(observation: str, task) -> tuple[float, bool] | None``: the domain's own
      reward and termination for an observation text (``None`` when it cannot tell),
      an alternative to the model's footer.
    - ``initial_observation(task) -> str``: the observation at reset for ``task``,
      computed without a real step (used by simulated environments).
    - ``actions: list[str]``: the action words of a domain with a small discrete action set.
    - ``is_deterministic(action) -> bool``: the real next observation is a function of the
      history (scored by rules only in ``hybrid``).
    - ``explain(step, previous_state) -> str``: a rationale for SFT targets with reasoning.
    - ``explain_text(action, observation) -> str``: the same rationale from the previous
      observation's text alone; a simulator of a checkpoint trained with
      ``reasoning="domain"`` writes it into the answer and lets the model continue with the
      observation block (so the rationale is never malformed or wrong).
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


class Trainer(Protocol):
    """A training stage (``cpt``, ``sft``, ...).

    ``train(train_episodes, config) -> output_dir`` where ``config`` is the
    stage's dict of options (model path or preset, output dir, steps, ...).

    A trainer may also have ``check_options(config) -> None``, raising ``ValueError`` for options
    ``train`` would refuse (a pipeline calls it for every stage before the first training
    stage runs), and ``options() -> list[tuple[key, default, description]]``, which
    ``agentworld train STAGE --options`` prints.
    """

    name: str

    def train(self, episodes: Sequence[Episode], config: dict[str, Any]) -> str: ...


class SimBackend(Protocol):
    """Loads a world model from a checkpoint: ``load(path, **options) -> WorldModel``."""

    name: str

    def load(self, path: str, **options: Any) -> WorldModel: ...
