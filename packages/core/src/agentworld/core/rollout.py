"""One rollout loop for real and simulated environments (Gymnasium ``Env`` and ``VectorEnv``).

A *rollout* plays episodes of a policy in environments with Gymnasium's API
(``reset(*, seed, options) -> (observation, info)``, ``step(action) -> (observation, reward,
terminated, truncated, info)``; Gymnasium 1.x ``Env``, and ``VectorEnv`` with
``autoreset_mode = NEXT_STEP``). Real environments (the sandboxed terminal, the toy-text
games) and simulated ones (``agentworld.sim.SimEnv``, ``SimVectorEnv``) go through the same
code:

- :func:`rollout` plays one episode in each of a list of environments in lockstep: every
  step asks the policy for the actions of all running episodes at once (one batch), then
  steps their environments (in ``workers`` threads);
- :class:`~agentworld.core.vector_rollout.VectorRollout` streams episodes out of a vector
  environment, across calls;
- :func:`start_episode` and :func:`step_episode` are the two halves of one step, for callers
  that an outside loop drives (a TRL tool call, an HTTP request).

The policy is batched: ``policy(episodes) -> actions``, one action (or ``None``: stop that
episode) per running :class:`RolloutEpisode`, in the order given. Hooks: ``record`` turns what
the environment returned into what is kept (collection adds the environment's privileged state,
:func:`agentworld.core.collect.recorded`); ``on_step(episode, transition)`` runs after each
transition, in episode order (logging, learning updates).

This module imports no environment library: it works on any object with that shape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from agentworld.core.env_batch import LocalEnvironments
from agentworld.core.protocols import EnvironmentBatch, VectorEnvironment
from agentworld.core.types import Action, Observation, ObservationText, Task


class Outcome(str, Enum):
    """How an episode ended."""

    TERMINATED = "terminated"  # the environment ended it (goal, failure, a reward footer)
    TRUNCATED = "truncated"  # the environment's own step limit
    MAX_STEPS = "max_steps"  # the rollout's ``max_steps``
    STOPPED = "stopped"  # the policy returned ``None``
    MALFORMED = "malformed"  # a simulated step whose answer did not parse
    ERROR = "error"  # the engine refused a simulated step (e.g. the KV budget)


@dataclass(slots=True)
class Transition:
    """One environment step: the action sent and what ``step`` returned (the observation as
    the ``record`` hook kept it)."""

    action: Any
    observation: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


@dataclass(slots=True)
class RolloutEpisode:
    """One episode of a rollout, running or finished.

    Attributes:
        index: Position of its environment in the rollout (sub-environment of a vector env).
        task: The task given to ``reset`` (``options={"task": task}``), or ``None``.
        seed: The seed given to ``reset``.
        initial_observation: What ``reset`` returned (after ``record``).
        reset_info: The ``info`` of ``reset``.
        transitions: One per step, in order.
        outcome: ``None`` while running.
    """

    index: int
    task: Task | None
    seed: int | None
    initial_observation: Any
    reset_info: dict[str, Any]
    transitions: list[Transition] = field(default_factory=list)
    outcome: Outcome | None = None

    @property
    def done(self) -> bool:
        return self.outcome is not None

    @property
    def observation(self) -> Any:
        """The latest observation."""
        return self.transitions[-1].observation if self.transitions else self.initial_observation

    @property
    def previous_observation(self) -> Any:
        """The observation the latest action was chosen on (the one before :attr:`observation`)."""
        if len(self.transitions) > 1:
            return self.transitions[-2].observation
        return self.initial_observation

    @property
    def history(self) -> list[Any]:
        """``[initial observation, action 1, observation 1, ...]``."""
        out = [self.initial_observation]
        for t in self.transitions:
            out += [t.action, t.observation]
        return out

    @property
    def num_steps(self) -> int:
        return len(self.transitions)

    @property
    def episode_return(self) -> float:
        """Undiscounted sum of the rewards."""
        return sum(t.reward for t in self.transitions)


Policy = Callable[[Sequence[RolloutEpisode]], Sequence[Any]]
Record = Callable[[Any, Any], Any]
OnStep = Callable[[RolloutEpisode, Transition], None]


def each(act: Callable[[RolloutEpisode], Any]) -> Policy:
    """A batched policy from a per-episode one (called in episode order)."""
    return lambda episodes: [act(e) for e in episodes]


def text_of(observation: Any) -> str:
    """The text of an observation (or action): ``.text`` of an
    :class:`~agentworld.core.types.Observation`, :class:`~agentworld.core.types.ObservationText`
    or :class:`~agentworld.core.types.Action`, else ``str(observation)``."""
    if isinstance(observation, (Observation, ObservationText, Action)):
        return observation.text
    return observation if isinstance(observation, str) else str(observation)


def outcome_of(terminated: bool, truncated: bool, info: dict[str, Any]) -> Outcome | None:
    """The outcome a step's flags give (``None``: the episode goes on); a truncation with
    ``info["truncated_reason"]`` ``"malformed"`` or ``"error"`` (a simulated step) is that."""
    if terminated:
        return Outcome.TERMINATED
    if truncated:
        reason = info.get("truncated_reason")
        return Outcome(reason) if reason in ("malformed", "error") else Outcome.TRUNCATED
    return None


def start_episode(
    env: Any,
    *,
    index: int = 0,
    task: Task | None = None,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    record: Record | None = None,
) -> RolloutEpisode:
    """Reset ``env`` and return the new episode: ``env.reset(seed=seed, options=...)`` with
    ``options`` plus ``{"task": task}`` when there is a task (``None`` when both are empty)."""
    observation, info = env.reset(seed=seed, options=reset_options(task, options))
    if record is not None:
        observation = record(env, observation)
    return RolloutEpisode(index, task, seed, observation, dict(info))


def reset_options(task: Task | None, options: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``options`` of ``reset``: ``options`` plus ``{"task": task}`` when there is a task
    (``None`` when both are empty)."""
    if task is not None:
        options = {**(options or {}), "task": task}
    return options or None


def step_episode(
    env: Any,
    episode: RolloutEpisode,
    action: Any,
    *,
    max_steps: int | None = None,
    record: Record | None = None,
) -> Transition:
    """Step ``env`` with ``action`` (sent unchanged), append the transition to ``episode`` and
    set its outcome when it ends (the environment's flags, else ``Outcome.MAX_STEPS`` once it
    has ``max_steps`` transitions).

    Raises:
        RuntimeError: ``episode`` has already ended.
    """
    if episode.done:
        raise RuntimeError(f"episode {episode.index} has ended ({episode.outcome.value})")
    observation, reward, terminated, truncated, info = env.step(action)
    if record is not None:
        observation = record(env, observation)
    return settle_step(episode, action, (observation, reward, terminated, truncated, info),
                       max_steps=max_steps)


def settle_step(
    episode: RolloutEpisode,
    action: Any,
    result: tuple[Any, float, bool, bool, dict[str, Any]],
    *,
    max_steps: int | None = None,
) -> Transition:
    """Append the transition of ``action`` whose ``step`` returned ``result`` (``(observation,
    reward, terminated, truncated, info)``) to ``episode`` and set its outcome when it ends
    (the environment's flags, else ``Outcome.MAX_STEPS`` once it has ``max_steps``
    transitions)."""
    observation, reward, terminated, truncated, info = result
    info = dict(info)
    transition = Transition(action, observation, float(reward), bool(terminated),
                            bool(truncated), info)
    episode.transitions.append(transition)
    episode.outcome = outcome_of(transition.terminated, transition.truncated, info)
    if episode.outcome is None and max_steps is not None and episode.num_steps >= max_steps:
        episode.outcome = Outcome.MAX_STEPS
    return transition


def rollout(
    envs: Sequence[Any] | Any,
    policy: Policy,
    max_steps: int,
    *,
    tasks: Sequence[Task | None] | None = None,
    seeds: Sequence[int | None] | int | None = None,
    options: Sequence[dict[str, Any] | None] | None = None,
    record: Record | None = None,
    on_step: OnStep | None = None,
    workers: int = 1,
) -> list[RolloutEpisode]:
    """Play one episode in each environment of ``envs``, all in lockstep, for at most
    ``max_steps`` steps each.

    Each step calls ``policy`` once with the running episodes (in index order) and sends the
    actions it returns unchanged to their environments' ``step``; ``None`` stops that episode
    (``Outcome.STOPPED``). A vector environment (it has ``num_envs``) is played by
    :class:`~agentworld.core.vector_rollout.VectorRollout`: one episode per sub-environment,
    taken from its first episodes.

    Args:
        envs: ``[n]`` environments (Gymnasium ``Env`` API), an
            :class:`~agentworld.core.protocols.EnvironmentBatch` of ``n`` (e.g. on Ray actors,
            :class:`~agentworld.core.ray_envs.RayEnvironments`), or one ``VectorEnv`` with
            ``autoreset_mode = NEXT_STEP``.
        policy: ``policy(running episodes) -> actions`` (same length).
        max_steps: Steps per episode at most (``Outcome.MAX_STEPS`` after).
        tasks: ``[n]`` tasks, given to ``reset`` as ``options={"task": task}`` (``None``: none).
        seeds: ``[n]`` reset seeds, or one ``int`` (environment ``i`` gets ``seeds + i``).
        options: ``[n]`` more ``reset`` options (e.g. ``SimEnv``'s ``initial_observation``).
        record: ``record(env, observation) -> kept observation`` (e.g. with privileged state);
            not with an ``EnvironmentBatch``.
        on_step: Called after each transition, in index order, with the outcome already set.
        workers: Threads that reset and step a list of environments (1: the caller's thread).

    Returns:
        ``[n]`` finished episodes in index order.

    Raises:
        ValueError: ``tasks``/``seeds``/``options`` do not have one item per environment, the policy
            returned the wrong number of actions, ``max_steps < 1``, or ``record`` with a batch.
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    if not isinstance(envs, EnvironmentBatch) and isinstance(envs, VectorEnvironment):
        if tasks is not None or options is not None:
            raise ValueError("tasks and options cannot be given to a vector env (it draws its own)")
        seed = seeds if isinstance(seeds, int) or seeds is None else None
        if seed is None and seeds is not None:
            raise ValueError("a vector env takes one int seed (sub-env i gets seed + i)")
        from agentworld.core.vector_rollout import VectorRollout

        return VectorRollout(envs, seed=seed, record=record).first_episodes(
            policy, max_steps, on_step=on_step
        )
    if isinstance(envs, EnvironmentBatch):
        if record is not None:
            raise ValueError("record needs the environments in this process, not a batch")
        batch, local = envs, None
    else:
        batch = local = LocalEnvironments(envs, workers=workers, record=record)
    n = len(batch)
    tasks = [None] * n if tasks is None else list(tasks)
    options = [None] * n if options is None else list(options)
    if seeds is None or isinstance(seeds, int):
        seeds = [None if seeds is None else seeds + i for i in range(n)]
    for name, value in (("tasks", tasks), ("seeds", seeds), ("options", options)):
        if len(value) != n:
            raise ValueError(f"{name} needs {n} items (one per env), got {len(value)}")
    try:
        resets = batch.reset_batch(
            range(n), seeds, [reset_options(tasks[i], options[i]) for i in range(n)]
        )
        episodes = [
            RolloutEpisode(i, tasks[i], seeds[i], observation, dict(info))
            for i, (observation, info) in enumerate(resets)
        ]
        while True:
            active = [e for e in episodes if not e.done]
            if not active:
                break
            stepping = []
            for episode, action in zip(active, policy_actions(policy, active), strict=True):
                if action is None:
                    episode.outcome = Outcome.STOPPED
                else:
                    stepping.append((episode, action))
            if not stepping:
                continue
            results = batch.step_batch([e.index for e, _ in stepping], [a for _, a in stepping])
            transitions = [
                settle_step(episode, action, result, max_steps=max_steps)
                for (episode, action), result in zip(stepping, results, strict=True)
            ]
            if on_step is not None:
                for (episode, _), transition in zip(stepping, transitions):
                    on_step(episode, transition)
    finally:
        if local is not None:
            local.shutdown()
    return episodes


def policy_actions(policy: Policy, episodes: Sequence[RolloutEpisode]) -> list[Any]:
    """``policy(episodes)`` as a list, checked to hold one action per episode.

    Raises:
        ValueError: it does not.
    """
    actions = list(policy(episodes))
    if len(actions) != len(episodes):
        raise ValueError(f"the policy returned {len(actions)} actions for {len(episodes)} episodes")
    return actions
