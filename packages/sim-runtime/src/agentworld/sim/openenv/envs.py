"""One served environment: a Gymnasium-style env (simulated :class:`SimEnv` or a domain's
real env) behind text actions and :class:`TextObservation` results.

Simulated sessions of one server share a single :class:`~agentworld.sim.Simulator` (and so
one world model), so the steps of concurrent sessions are batched by the engine.
"""

from __future__ import annotations

import math
import threading
import uuid
from dataclasses import dataclass
from typing import Any

from agentworld.core.env_checks import CheckedEnvironment
from agentworld.core.rollout import RolloutEpisode, start_episode, step_episode
from agentworld.core.textenv import action_text
from agentworld.core.types import Action, Task
from agentworld.sim.env import SimEnv
from agentworld.sim.openenv.models import EpisodeState, TextObservation
from fastapi.encoders import jsonable_encoder


# Info keys a real env may report that only the server may see: the episode root's host
# path (``root``), a file-state snapshot (``state``), anything a domain marks ``privileged``.
PRIVILEGED_INFO = frozenset({"root", "state", "privileged"})


class EpisodeOverError(RuntimeError):
    """``step`` was called before ``reset`` or after the episode ended."""


def jsonable(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` as JSON-encodable values: pydantic models and containers are encoded, anything
    else becomes its ``repr``; non-finite floats become ``None`` (JSON has no NaN)."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        try:
            value = jsonable_encoder(value)
        except (TypeError, ValueError):
            value = repr(value)
        out[str(key)] = None if isinstance(value, float) and not math.isfinite(value) else value
    return out


@dataclass(slots=True)
class ServedEnv:
    """A Gymnasium-style env (``reset(*, seed, options)``, ``step``, ``close``) speaking text.

    Args:
        env: A :class:`SimEnv` or a real domain env; an action goes in as an
            :class:`~agentworld.core.types.Action` (the environment boundary,
            :mod:`agentworld.core.textenv`).
        domain: Domain name, reported in the state.
        simulated: True for a :class:`SimEnv`.
    """

    env: Any
    domain: str
    simulated: bool
    episode_id: str | None = None
    episode: RolloutEpisode | None = None  # the running (or last) episode

    @property
    def step_count(self) -> int:
        """Steps of the current episode."""
        return 0 if self.episode is None else self.episode.num_steps

    @property
    def done(self) -> bool:
        """True before the first reset and once the episode ended."""
        return self.episode is None or self.episode.done

    def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, task: Task | None = None
    ) -> TextObservation:
        """Start an episode (``task``, made on the server, given to the env as
        ``options["task"]``; its id and instruction go into the metadata); reward ``None``."""
        self.episode = start_episode(self.env, task=task, seed=seed)
        info = self.episode.reset_info
        self.episode_id = episode_id or info.get("episode_id") or uuid.uuid4().hex
        if task is not None:
            info = dict(info, task_id=task.id, instruction=task.instruction)
        return self._observation(self.episode.initial_observation, None, False, False, info)

    def step(self, action: Action | str) -> TextObservation:
        """One transition on ``action``, an :class:`Action` or its text
        (:func:`agentworld.core.rollout.step_episode`); ``done = terminated or truncated``.

        Raises:
            EpisodeOverError: No episode is running (call reset first).
        """
        if self.done:
            raise EpisodeOverError(
                "no episode is running: reset first (the last episode ended)"
                if self.episode_id
                else "no episode is running: reset before the first step"
            )
        assert self.episode is not None
        action = action if isinstance(action, Action) else Action(text=action_text(action))
        t = step_episode(self.env, self.episode, action)
        return self._observation(t.observation, t.reward, t.terminated, t.truncated, t.info)

    def state(self, session_id: str | None = None) -> EpisodeState:
        """OpenEnv state of this env (``episode_id``, ``step_count``, ``done``, ...)."""
        return EpisodeState(
            episode_id=self.episode_id,
            step_count=self.step_count,
            session_id=session_id,
            domain=self.domain,
            simulated=self.simulated,
            done=self.done,
        )

    def close(self) -> None:
        """Close the underlying env."""
        self.env.close()

    def _observation(
        self,
        observation: Any,
        reward: float | None,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
    ) -> TextObservation:
        # ``observation.state`` (a real env's file-state snapshot) and the host-side keys of
        # ``info`` (``PRIVILEGED_INFO``: the episode root's host path, ...) are privileged:
        # they stay on the server and are never sent to the agent.
        extra = {k: v for k, v in info.items() if k not in PRIVILEGED_INFO}
        extra.update(terminated=bool(terminated), truncated=bool(truncated))
        text = observation if isinstance(observation, str) else observation.text
        if reward is not None and not math.isfinite(reward):
            reward = None
        return TextObservation(text=text, reward=reward, done=self.done, metadata=jsonable(extra))


class SimEnvFactory:
    """Makes simulated sessions: a :class:`SimEnv` each, all on one shared Simulator.

    The first env is built on ``world_model`` (so :class:`SimEnv` configures the Simulator from
    ``domain`` and ``options``: rewards, history window, ``max_new_tokens``); later envs reuse
    its ``simulator``. Thread-safe.

    Args:
        world_model: A loaded world model (e.g. ``get_sim_backend("hf").load(path)``).
        domain: The domain object (system prompt, initial observation, rewards).
        options: Further :class:`SimEnv` keyword arguments (``max_steps``, ``reward_source``,
            ``on_parse_error``, ...).
    """

    simulated = True

    def __init__(self, world_model: Any, domain: Any, **options: Any):
        self.domain, self.options = domain, options
        self._source = world_model
        self._lock = threading.Lock()

    def __call__(self) -> ServedEnv:
        with self._lock:
            env = SimEnv(self._source, domain=self.domain, **self.options)
            self._source = env.simulator
        return ServedEnv(env, self.domain.name, simulated=True)


class RealEnvFactory:
    """Makes real sessions: ``domain.make_env(**options)`` each (e.g. a sandboxed terminal),
    its results checked (:class:`~agentworld.core.env_checks.CheckedEnvironment`: a plugin's
    wrong ``step`` result or exception reaches the client naming the domain and the call)."""

    simulated = False

    def __init__(self, domain: Any, **options: Any):
        self.domain, self.options = domain, options

    def __call__(self) -> ServedEnv:
        env = CheckedEnvironment(self.domain, self.domain.make_env(**self.options), locate=False)
        return ServedEnv(env, self.domain.name, simulated=False)
