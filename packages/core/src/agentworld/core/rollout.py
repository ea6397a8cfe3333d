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

from collections.abc import Sequence
from typing import Any

from agentworld.core.env_batch import LocalEnvironments
from agentworld.core.protocols import EnvironmentBatch, VectorEnvironment
from agentworld.core.rollout_types import (
    OnStep,
    Outcome,
    Policy,
    Record,
    RolloutEpisode,
    Transition,
    each,
    outcome_of,
    policy_actions,
    text_of,
)
from agentworld.core.types import Task
from agentworld.core.vector_rollout import VectorRollout

#: The records live in :mod:`agentworld.core.rollout_types`; importing them from here works too.
__all__ = [
    "OnStep", "Outcome", "Policy", "Record", "RolloutEpisode", "Transition", "each",
    "outcome_of", "policy_actions", "reset_options", "rollout", "settle_step", "start_episode",
    "step_episode", "text_of",
]


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
