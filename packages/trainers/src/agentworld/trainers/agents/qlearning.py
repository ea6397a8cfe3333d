"""Tabular Q-learning keyed by observation text, with an epsilon-greedy behaviour policy.

Q-learning: Watkins (1989), *Learning from Delayed Rewards*, PhD thesis, Cambridge; the
one-step update of Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed.,
section 6.5::

    Q(s, a) <- Q(s, a) + alpha * (r + gamma * max_a' Q(s', a') - Q(s, a))

with the bootstrap term dropped when ``s'`` is terminal. The state ``s`` is the observation
text itself, which is exact for Markov text domains (the classic ones render the whole board).
"""

from __future__ import annotations

import json
import math
import os
import random
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from agentworld.core.io import atomic_write

FORMAT_VERSION = 1


class Decay(str, Enum):
    """How epsilon moves from ``start`` to ``end`` over ``episodes`` episodes."""

    LINEAR = "linear"
    EXPONENTIAL = "exponential"


@dataclass(slots=True)
class EpsilonSchedule:
    """Exploration rate per finished episode count.

    Linear: ``start + (end - start) * min(k / episodes, 1)``. Exponential:
    ``end + (start - end) * exp(-5 * k / episodes)`` (within 1% of ``end`` after ``episodes``).

    Raises:
        ValueError: a rate outside [0, 1] or ``episodes < 1``.
    """

    start: float = 1.0
    end: float = 0.05
    episodes: int = 1000
    decay: Decay = Decay.LINEAR

    def __post_init__(self) -> None:
        self.decay = Decay(self.decay)
        for name in ("start", "end"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"epsilon_{name} must be in [0, 1], got {value}")
        if self.episodes < 1:
            raise ValueError(f"epsilon decay episodes must be >= 1, got {self.episodes}")

    def value(self, finished_episodes: int) -> float:
        """Epsilon after ``finished_episodes`` episodes (a probability in [0, 1])."""
        frac = finished_episodes / self.episodes
        if self.decay is Decay.LINEAR:
            return self.start + (self.end - self.start) * min(frac, 1.0)
        return self.end + (self.start - self.end) * math.exp(-5.0 * frac)


@dataclass(slots=True)
class QLearningAgent:
    """Tabular Q-learning over text observations and a fixed list of action words.

    ``q[key]`` is a list of ``len(actions)`` action values (units of reward), created at
    ``initial_q`` the first time a state is seen; ``key`` is the observation text without
    the lines that start with one of ``ignore_lines`` (e.g. the classic domains'
    ``reward:`` line, which repeats the last reward and would split one Markov state into
    several keys). Exploration and
    tie-breaking draw from one ``random.Random(seed)``, so the same seed and the same
    experience give the same table.

    Args:
        actions: The domain's action words, e.g. ``["left", "down", "right", "up"]``.
        alpha: Learning rate in (0, 1].
        gamma: Discount factor in [0, 1].
        epsilon: Exploration schedule (per finished episode).
        seed: Seed of the exploration / tie-breaking generator.
        initial_q: Value of unseen state-action pairs.
        ignore_lines: Line prefixes left out of the state key.
        key_lines: When given, only lines starting with one of these prefixes make the state
            key (a state abstraction, e.g. the classic domains' position and passenger lines);
            an observation without such a line falls back to its whole text.

    Raises:
        ValueError: no actions, duplicate actions, or ``alpha``/``gamma`` out of range.
    """

    actions: list[str]
    alpha: float = 0.1
    gamma: float = 0.99
    epsilon: EpsilonSchedule = field(default_factory=EpsilonSchedule)
    seed: int = 0
    initial_q: float = 0.0
    ignore_lines: tuple[str, ...] = ()
    key_lines: tuple[str, ...] = ()
    q: dict[str, list[float]] = field(default_factory=dict)
    num_episodes: int = 0
    num_updates: int = 0
    rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.actions or len(set(self.actions)) != len(self.actions):
            raise ValueError(
                f"actions must be a non-empty list of distinct words, got {self.actions}"
            )
        if not 0.0 < self.alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {self.alpha}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma}")
        self.ignore_lines = tuple(self.ignore_lines)
        self.key_lines = tuple(self.key_lines)
        self.rng = random.Random(self.seed)

    @property
    def current_epsilon(self) -> float:
        """Exploration rate for the episode in progress."""
        return self.epsilon.value(self.num_episodes)

    def key(self, observation: str) -> str:
        """The state key of ``observation``: its ``key_lines`` lines when set and present,
        else its text minus the ``ignore_lines`` lines."""
        lines = observation.split("\n")
        if self.key_lines:
            kept = [x for x in lines if x.startswith(self.key_lines)]
            if kept:
                return "\n".join(kept)
        if not self.ignore_lines:
            return observation
        return "\n".join(x for x in lines if not x.startswith(self.ignore_lines))

    def values(self, observation: str) -> list[float]:
        """Action values ``[num_actions]`` of ``observation`` (``initial_q`` when unseen; not stored)."""
        return self.q.get(self.key(observation)) or [self.initial_q] * len(self.actions)

    def act(self, observation: str, greedy: bool = False) -> str:
        """The action word to take: epsilon-greedy, or greedy when ``greedy``.

        Greedy ties are broken uniformly at random while training and by action order when
        ``greedy`` (so evaluation is deterministic).
        """
        if not greedy and self.rng.random() < self.current_epsilon:
            return self.actions[self.rng.randrange(len(self.actions))]
        values = self.values(observation)
        best = max(values)
        ties = [i for i, v in enumerate(values) if v == best]
        index = ties[0] if greedy or len(ties) == 1 else ties[self.rng.randrange(len(ties))]
        return self.actions[index]

    def update(
        self, observation: str, action: str, reward: float, next_observation: str, terminated: bool
    ) -> float:
        """One Q-learning update of ``(s, a, r, s')``; returns the TD error (reward units).

        ``terminated`` drops the bootstrap term; a truncated (time-limit) transition should
        pass ``terminated=False`` so it still bootstraps (Sutton & Barto 2018, section 3.4).

        Raises:
            ValueError: ``action`` is not one of :attr:`actions`.
        """
        try:
            a = self.actions.index(action)
        except ValueError:
            raise ValueError(f"unknown action {action!r}; valid: {self.actions}") from None
        row = self.q.setdefault(self.key(observation), [self.initial_q] * len(self.actions))
        target = reward if terminated else reward + self.gamma * max(self.values(next_observation))
        td_error = target - row[a]
        row[a] += self.alpha * td_error
        self.num_updates += 1
        return td_error

    def end_episode(self) -> None:
        """Count one finished episode (advances the epsilon schedule)."""
        self.num_episodes += 1

    # -- persistence -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready state: hyper-parameters, counters, the generator state and the Q-table."""
        return {
            "format": "agentworld.q-learning",
            "version": FORMAT_VERSION,
            "actions": list(self.actions),
            "alpha": self.alpha,
            "gamma": self.gamma,
            "epsilon": {
                "start": self.epsilon.start,
                "end": self.epsilon.end,
                "episodes": self.epsilon.episodes,
                "decay": self.epsilon.decay.value,
            },
            "seed": self.seed,
            "initial_q": self.initial_q,
            "ignore_lines": list(self.ignore_lines),
            "key_lines": list(self.key_lines),
            "num_episodes": self.num_episodes,
            "num_updates": self.num_updates,
            "rng_state": _rng_state_to_json(self.rng.getstate()),
            "q": self.q,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QLearningAgent:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: ``data`` is not a saved Q-learning agent of a known version.
        """
        if data.get("format") != "agentworld.q-learning" or data.get("version") != FORMAT_VERSION:
            raise ValueError(
                f"not an agentworld Q-learning agent (format {data.get('format')!r}, "
                f"version {data.get('version')!r}; expected version {FORMAT_VERSION})"
            )
        agent = cls(
            actions=list(data["actions"]),
            alpha=data["alpha"],
            gamma=data["gamma"],
            epsilon=EpsilonSchedule(**data["epsilon"]),
            seed=data["seed"],
            initial_q=data["initial_q"],
            ignore_lines=tuple(data["ignore_lines"]),
            key_lines=tuple(data.get("key_lines", ())),
            q={k: [float(x) for x in v] for k, v in data["q"].items()},
            num_episodes=data["num_episodes"],
            num_updates=data["num_updates"],
        )
        agent.rng.setstate(_rng_state_from_json(data["rng_state"]))
        return agent

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the agent as JSON to ``path`` atomically (:func:`agentworld.core.io.atomic_write`)."""
        return Path(atomic_write(os.fspath(path), json.dumps(self.to_dict())))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> QLearningAgent:
        """Read an agent written by :meth:`save`.

        Raises:
            FileNotFoundError: no file at ``path``.
            ValueError: the file is not a saved Q-learning agent.
        """
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def _rng_state_to_json(state: tuple[Any, ...]) -> list[Any]:
    version, internal, gauss = state
    return [version, list(internal), gauss]


def _rng_state_from_json(data: list[Any]) -> tuple[Any, ...]:
    version, internal, gauss = data
    return (version, tuple(internal), gauss)
