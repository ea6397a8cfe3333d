"""Episodes streamed out of a Gymnasium ``VectorEnv`` (``autoreset_mode = NEXT_STEP``), by
the same policy and hooks as :func:`agentworld.core.rollout.rollout`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from agentworld.core.rollout_types import (
    OnStep,
    Outcome,
    Policy,
    Record,
    RolloutEpisode,
    Transition,
    outcome_of,
    policy_actions,
)


def vector_info(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """Sub-environment ``i``'s entries of a Gymnasium vector ``infos`` dict (a key ``k`` counts
    where its mask ``_k`` is true)."""
    return {
        k: v[i]
        for k, v in infos.items()
        if not k.startswith("_") and (infos.get(f"_{k}") is None or infos[f"_{k}"][i])
    }


class VectorRollout:
    """Episodes streamed out of a Gymnasium ``VectorEnv`` with ``autoreset_mode = NEXT_STEP``
    (``agentworld.sim.SimVectorEnv``): every step asks ``policy`` for the actions of the
    running sub-environments (index order) and steps all sub-environments in one call.

    Under ``NEXT_STEP`` the step after an episode ended resets that sub-environment and ignores
    its action: the loop sends ``idle_action`` there and starts the sub-environment's next
    :class:`RolloutEpisode` from the observation it returns. Episodes still running when
    :meth:`run` returns go on at the next call.

    Args:
        env: The vector environment (``num_envs``, ``reset``, ``step``).
        seed: ``reset(seed=seed)`` at the first call.
        record: As in :func:`rollout`.
        idle_action: The action sent to a sub-environment that is resetting.

    Attributes:
        num_steps: Transitions so far (steps of running episodes, all sub-environments).
        num_episodes: Episodes finished so far.
    """

    def __init__(
        self, env: Any, *, seed: int | None = None, record: Record | None = None,
        idle_action: Any = "",
    ):
        self.env, self.seed, self.record, self.idle_action = env, seed, record, idle_action
        self.num_steps = 0
        self.num_episodes = 0
        self._episodes: list[RolloutEpisode] | None = None

    def run(self, policy: Policy, n: int, *, on_step: OnStep | None = None) -> list[RolloutEpisode]:
        """Step until at least ``n`` episodes finished (all sub-environments step together, so
        a few more may finish on the last step); returns the finished ones in finishing order
        (index order within a step)."""
        finished: list[RolloutEpisode] = []
        while len(finished) < n:
            finished += self._step(policy, on_step)
        return finished

    def first_episodes(
        self, policy: Policy, max_steps: int, *, on_step: OnStep | None = None
    ) -> list[RolloutEpisode]:
        """The first episode of every sub-environment, each cut at ``max_steps`` transitions
        (``Outcome.MAX_STEPS``); later episodes are stepped with ``idle_action`` and dropped.

        Returns:
            ``[num_envs]`` episodes in sub-environment order.
        """
        first: dict[int, RolloutEpisode] = {}

        def keep(episodes: Sequence[RolloutEpisode]) -> list[Any]:
            live = [e for e in episodes if e.index not in first]
            actions = iter(policy_actions(policy, live)) if live else iter(())
            return [next(actions) if e.index not in first else self.idle_action for e in episodes]

        def cut(episode: RolloutEpisode, transition: Transition) -> None:
            if episode.index in first:
                return
            if not episode.done and episode.num_steps >= max_steps:
                # the sub-environment runs on (its later steps are dropped): keep a copy
                episode = replace(episode, transitions=list(episode.transitions),
                                  outcome=Outcome.MAX_STEPS)
            if on_step is not None:
                on_step(episode, transition)
            if episode.done:
                first[episode.index] = episode

        while len(first) < self.env.num_envs:
            self._step(keep, cut)
        return [first[i] for i in range(self.env.num_envs)]

    def _step(self, policy: Policy, on_step: OnStep | None) -> list[RolloutEpisode]:
        """One vector step; the episodes that finished in it."""
        env = self.env
        if self._episodes is None:
            observations, infos = env.reset(seed=self.seed)
            self._episodes = [self._start(i, observations[i], infos) for i in range(env.num_envs)]
        episodes = self._episodes
        running = [e for e in episodes if not e.done]
        actions = [self.idle_action] * env.num_envs
        if running:
            for episode, action in zip(running, policy_actions(policy, running), strict=True):
                if action is None:
                    raise ValueError("a vector env cannot stop one episode: the policy gave None")
                actions[episode.index] = action
        observations, rewards, terminations, truncations, infos = env.step(actions)
        finished = []
        for i, episode in enumerate(episodes):
            if episode.done:  # NEXT_STEP autoreset: this step only reset sub-environment i
                episodes[i] = self._start(i, observations[i], infos)
                continue
            observation = observations[i]
            if self.record is not None:
                observation = self.record(env, observation)
            info = vector_info(infos, i)
            transition = Transition(actions[i], observation, float(rewards[i]),
                                    bool(terminations[i]), bool(truncations[i]), info)
            episode.transitions.append(transition)
            episode.outcome = outcome_of(transition.terminated, transition.truncated, info)
            self.num_steps += 1
            if on_step is not None:
                on_step(episode, transition)
            if episode.done:
                self.num_episodes += 1
                finished.append(episode)
        return finished

    def _start(self, i: int, observation: Any, infos: dict[str, Any]) -> RolloutEpisode:
        if self.record is not None:
            observation = self.record(self.env, observation)
        info = vector_info(infos, i)
        return RolloutEpisode(i, None, None, observation, info)

