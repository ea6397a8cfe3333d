"""Where an agent's experience comes from: ``--env real:DOMAIN`` or ``--env sim:CHECKPOINT``.

:class:`RealRunner` plays whole episodes in a domain's real environment, one at a time.
:class:`SimRunner` plays many episodes at once in a :class:`~agentworld.sim.SimVectorEnv`
(every step of all sub-environments is one batched world-model call). Both feed the same
agent the same way (``act`` then ``update`` per transition, ``end_episode`` per episode)
and count their own environment steps, so real and simulated experience are measured apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Protocol

from agentworld.core.domain_base import domain_hooks
from agentworld.core.env_checks import CheckedEnvironment, initial_text
from agentworld.core.protocols import Domain
from agentworld.core.rollout import Outcome, RolloutEpisode, Transition, each, rollout, text_of
from agentworld.core.types import Action, Task
from agentworld.core.vector_rollout import VectorRollout


class Source(str, Enum):
    """Where an episode ran."""

    REAL = "real"
    SIM = "sim"


class Actor(Protocol):
    """What a runner needs from a policy: ``act(observation, greedy) -> action word``."""

    def act(self, observation: str, greedy: bool = False) -> str: ...


class Learner(Actor, Protocol):
    """An actor over a fixed list of action words that also learns from transitions
    (e.g. :class:`~agentworld.trainers.agents.qlearning.QLearningAgent`)."""

    actions: list[str]

    def update(
        self, observation: str, action: str, reward: float, next_observation: str, terminated: bool
    ) -> float: ...

    def end_episode(self) -> None: ...


@dataclass(slots=True)
class EnvSpec:
    """A parsed ``--env`` value: ``kind`` and its ``target`` (domain name or checkpoint path)."""

    kind: Source
    target: str

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.target}"


@dataclass(slots=True)
class EpisodeResult:
    """One finished episode: its return (sum of rewards), length (steps), how it ended."""

    source: Source
    ret: float
    length: int
    outcome: Outcome
    last_reward: float = 0.0


def parse_env_spec(text: str) -> EnvSpec:
    """``"real:frozenlake-8x8"`` -> ``EnvSpec(REAL, "frozenlake-8x8")``; same for ``sim:PATH``.

    Raises:
        ValueError: no ``real:``/``sim:`` prefix or an empty target.
    """
    kind, sep, target = text.partition(":")
    if not sep or kind not in ("real", "sim") or not target:
        raise ValueError(f"--env must be real:DOMAIN or sim:CHECKPOINT, got {text!r}")
    return EnvSpec(Source(kind), target)


def domain_actions(domain: Any) -> list[str]:
    """The domain's action words (its ``actions``).

    Raises:
        ValueError: the domain declares no finite action list (tabular agents need one).
    """
    actions = domain_hooks(domain).actions
    if not actions or not all(isinstance(a, str) for a in actions):
        name = domain.name if isinstance(domain, Domain) else type(domain).__name__
        raise ValueError(
            f"domain {name!r} has no finite action list (attribute `actions`: list[str]); "
            "a tabular agent needs one (classic domains such as frozenlake-4x4 have it)"
        )
    return list(actions)


def is_success(domain: Any, result: EpisodeResult) -> bool:
    """Did the episode reach the goal?

    The domain's ``is_success(result)`` decides; by default an episode
    succeeds when it terminated on a positive reward (FrozenLake's goal gives 1, a hole 0;
    Taxi's successful dropoff gives +20 and is its only termination).
    """
    return bool(domain_hooks(domain).is_success(result))


# -- real environment -----------------------------------------------------------------------------


def run_real_episode(
    env: Any,
    actor: Actor,
    *,
    task: Task | None,
    seed: int,
    max_steps: int,
    learn: bool,
    greedy: bool = False,
) -> EpisodeResult:
    """Play one episode of ``actor`` in a real ``Environment`` (``reset(seed, options={"task"})``)
    through :func:`agentworld.core.rollout.rollout`.

    With ``learn`` the actor is a :class:`Learner`: every transition is an ``update``
    (terminated transitions do not bootstrap) and ``end_episode`` is called at the end.
    """

    def update(episode: RolloutEpisode, t: Transition) -> None:
        previous, observation = text_of(episode.previous_observation), text_of(t.observation)
        learner: Learner = actor  # type: ignore[assignment]
        learner.update(previous, t.action.text, t.reward, observation, t.terminated)

    [episode] = rollout(
        [env],
        each(lambda e: Action(text=actor.act(text_of(e.observation), greedy))),
        max_steps,
        tasks=[task],
        seeds=[seed],
        on_step=update if learn else None,
    )
    if learn:
        actor.end_episode()  # type: ignore[attr-defined]
    return result_of(episode, Source.REAL)


def result_of(episode: RolloutEpisode, source: Source) -> EpisodeResult:
    """The :class:`EpisodeResult` of a finished episode: a simulated step whose answer did not
    parse (or that the engine refused) ends it as ``MALFORMED`` (``ERROR``) and counts in
    neither its return nor its length; an episode cut by the step limit is ``TRUNCATED``."""
    steps, outcome = episode.transitions, episode.outcome
    if outcome in (Outcome.MALFORMED, Outcome.ERROR):
        steps, last = steps[:-1], 0.0
    else:
        outcome = Outcome.TERMINATED if outcome is Outcome.TERMINATED else Outcome.TRUNCATED
        last = steps[-1].reward if steps else 0.0
    return EpisodeResult(source, sum(t.reward for t in steps), len(steps), outcome, last)


class RealRunner:
    """Episodes in the domain's real environment; episode ``k`` uses seed ``seed + k`` and the
    task ``domain.tasks().sample(1, seed=seed + k)[0]``.

    Args:
        domain: The domain (``make_env()``, ``tasks()``).
        seed: Seed of the first episode.
        max_steps: Steps before an episode is cut (truncated).
    """

    def __init__(self, domain: Any, *, seed: int, max_steps: int):
        self.domain, self.seed, self.max_steps = domain, seed, max_steps
        self.env = CheckedEnvironment(domain, domain.make_env())  # a plugin's mistake, named
        self.num_steps = 0
        self.num_episodes = 0

    def run(self, agent: Learner, n: int) -> list[EpisodeResult]:
        """Play ``n`` learning episodes; returns their results in order."""
        results = []
        for _ in range(n):
            seed = self.seed + self.num_episodes
            task = self.domain.tasks().sample(1, seed=seed)[0]
            result = run_real_episode(
                self.env, agent, task=task, seed=seed, max_steps=self.max_steps, learn=True
            )
            self.num_steps += result.length
            self.num_episodes += 1
            results.append(result)
        return results

    def close(self) -> None:
        """Close the real environment."""
        self.env.close()


# -- simulated environment ------------------------------------------------------------------------


def checkpoint_dir(path: str) -> Path:
    """``path`` checked to be a model checkpoint directory (it holds ``config.json``).

    Raises:
        ValueError: ``path`` is not a directory or holds no ``config.json``.
    """
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ValueError(f"--env sim:{path}: no such checkpoint directory")
    if not (p / "config.json").is_file():
        raise ValueError(f"--env sim:{path}: not a model checkpoint (no config.json inside)")
    return p


def checkpoint_card(path: Path) -> dict[str, Any]:
    """The checkpoint's world-model card (``agentworld.json``: ``domain``, ``rewards``,
    ``history_window``; :mod:`agentworld.core.card`), ``{}`` when it has none.

    Raises:
        ValueError: the card is not a JSON object.
    """
    from agentworld.core.card import read_card

    return read_card(path)


class SimRunner:
    """Episodes in a :class:`~agentworld.sim.SimVectorEnv` of ``num_envs`` sub-environments.

    Every step asks the agent for one action per running sub-environment and sends them
    to the world model as one batch. Episodes start from ``domain.initial_observation(task)``
    (tasks drawn from ``domain.tasks()`` by the vector env's seeded generators). An answer
    that does not parse ends its episode (``Outcome.MALFORMED``, counted in
    :attr:`parse_failures`, no update) and never raises. Episodes still running when
    :meth:`run` returns continue on the next call.

    Args:
        world_model: A loaded world model (``WorldModel``).
        domain: The domain (tasks, system prompt, initial observations, rewards).
        num_envs: Sub-environments stepped together.
        seed: Seeds the sub-environments (``reset(seed=seed)``).
        max_steps: Steps before a simulated episode is truncated.
        env_options: More :class:`~agentworld.sim.SimVectorEnv` keyword arguments
            (``reward_source``, ``on_parse_error``, ``max_retries``, ``max_new_tokens``).

    Raises:
        ValueError: (at the first reset) the domain's ``initial_observation(task)`` is
            ``None``: simulated episodes cannot start without one.
    """

    def __init__(
        self,
        world_model: Any,
        domain: Any,
        *,
        num_envs: int,
        seed: int,
        max_steps: int,
        env_options: dict[str, Any] | None = None,
    ):
        from agentworld.sim import SimVectorEnv

        hooks = domain_hooks(domain)

        def initial_observation(task: Task | None) -> str:
            observation = initial_text(domain, task)  # checked: a str or None
            if observation is None:
                raise ValueError(
                    f"domain {hooks.name!r} has no initial_observation(task); "
                    "simulated episodes cannot start without one"
                )
            return observation

        self.env = SimVectorEnv(
            world_model,
            num_envs,
            domain=domain,
            initial_observation=initial_observation,
            max_steps=max_steps,
            **(env_options or {}),
        )
        self.num_envs, self.seed = num_envs, seed
        self.stream = VectorRollout(self.env, seed=seed)
        self.parse_failures = 0
        self.errors = 0

    @property
    def num_steps(self) -> int:
        """Simulated transitions so far (malformed ones too)."""
        return self.stream.num_steps

    @property
    def num_episodes(self) -> int:
        """Simulated episodes finished so far."""
        return self.stream.num_episodes

    def run(self, agent: Learner, n: int) -> list[EpisodeResult]:
        """Step until at least ``n`` episodes finished (all sub-environments step together, so
        a few more may finish on the last step); returns the finished ones."""

        def learn(episode: RolloutEpisode, t: Transition) -> None:
            if episode.outcome is Outcome.MALFORMED:
                self.parse_failures += 1
            elif episode.outcome is Outcome.ERROR:
                self.errors += 1
            else:
                previous = text_of(episode.previous_observation)
                agent.update(previous, t.action, t.reward, text_of(t.observation), t.terminated)
            if episode.done:
                agent.end_episode()

        finished = self.stream.run(each(lambda e: agent.act(text_of(e.observation))), n,
                                   on_step=learn)
        return [result_of(e, Source.SIM) for e in finished]

    def close(self) -> None:
        """Close every simulated episode."""
        self.env.close()


def load_world_model(
    path: Path,
    *,
    backend: str = "hf",
    temperature: float = 1.0,
    seed: int = 0,
    max_new_tokens: int = 256,
    options: dict[str, Any] | None = None,
) -> Any:
    """A world model from checkpoint ``path`` via the ``backend`` sim plugin.

    ``temperature`` defaults to 1.0 so a stochastic environment's spread of next
    observations can be sampled; ``options`` go to the backend's ``load``.

    Raises:
        agentworld.core.plugins.UnknownPluginError: ``backend`` is not installed.
    """
    from agentworld.core.plugins import get_sim_backend

    return get_sim_backend(backend).load(
        str(path),
        temperature=temperature,
        seed=seed,
        max_new_tokens=max_new_tokens,
        **(options or {}),
    )
