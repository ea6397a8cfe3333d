"""``ClassicEnv``: a Gymnasium toy-text environment behind the text :class:`Environment` API."""

from __future__ import annotations

import dataclasses
import functools
import string
import threading
from typing import Any, ClassVar

import gymnasium
from agentworld.core.gymvec import FreeText
from agentworld.core.types import Action, ObservationText, Task
from agentworld.domains.classic.render import Board, decode, render
from agentworld.domains.classic.variants import Variant, get_variant
from gymnasium.utils import seeding

MAX_SHOWN = 40  # characters of an invalid action echoed back
ACTION_CHARSET = string.ascii_letters + string.digits + string.punctuation + " "
ACTION_MAX_LENGTH = 64
OBSERVATION_MAX_LENGTH = 4096  # the largest rendering (Taxi's map and lines) is far shorter


def env_seed_of(task: Task | dict[str, Any] | None) -> int | None:
    """The environment seed a task carries in ``setup["env_seed"]`` (``None`` without one)."""
    if task is None:
        return None
    setup = task.setup if isinstance(task, Task) else task.get("setup", {})
    seed = setup.get("env_seed")
    return None if seed is None else int(seed)


def make_gym_env(variant: Variant) -> gymnasium.Env:
    """``gymnasium.make`` of the variant (with its registered ``TimeLimit``; no env checker)."""
    return gymnasium.make(variant.gym_id, disable_env_checker=True, **variant.kwargs)


@functools.cache
def _private(name: str) -> tuple[gymnasium.Env, threading.Lock]:
    return make_gym_env(get_variant(name)).unwrapped, threading.Lock()


def start_state(variant: Variant, env_seed: int) -> int:
    """Integer state after ``reset(seed=env_seed)``, computed on a private environment (no step)."""
    env, lock = _private(variant.name)
    with lock:
        s, _ = env.reset(seed=env_seed)
    return int(s)


class ClassicEnv(gymnasium.Env[str, str]):
    """A real toy-text environment with text observations and word actions (``gymnasium.Env``).

    ``reset``/``step`` follow Gymnasium 1.x and return
    :class:`~agentworld.core.types.ObservationText` observations (``str``): the text is
    :func:`~agentworld.domains.classic.render.render` and ``state`` the decoded
    :class:`~agentworld.domains.classic.render.Board` (all of it is drawn, so nothing is
    privileged; :meth:`privileged_state` returns the same). Spaces: ``spaces.Text``; actions
    are up to :data:`ACTION_MAX_LENGTH` characters, observations up to
    :data:`OBSERVATION_MAX_LENGTH` of ``string.printable``. ``step`` takes a ``str`` or an
    :class:`~agentworld.core.types.Action`.

    Seeding: with a task, ``reset`` seeds the Gymnasium environment with
    ``task.setup["env_seed"]`` (so the start state equals
    :func:`start_state`) and then, when ``seed`` is given, re-seeds the
    dynamics RNG (slippery moves) with ``seed``; without a task, ``seed`` is
    passed to Gymnasium's ``reset`` as usual. Same seeds, same episode.

    Actions are the variant's words, matched case-insensitively after
    stripping. Any other text is an invalid action: the state is unchanged,
    the reward is 0, and the observation starts with
    ``invalid action: X; valid: ...``; it never raises. Every step (invalid
    ones too) counts toward the registered time limit
    (``max_episode_steps``: 100 for FrozenLake 4x4, 200 for 8x8 and Taxi,
    none for CliffWalking), after which ``truncated`` is true.

    Args:
        variant: Variant name (``"taxi"``) or :class:`Variant`.
        render_mode: ``None`` or ``"ansi"`` (``render()`` returns the current text).

    Raises:
        KeyError: unknown variant name.
        ValueError: an unknown ``render_mode``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, variant: str | Variant, render_mode: str | None = None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.variant = get_variant(variant) if isinstance(variant, str) else variant
        self.render_mode = render_mode
        self.env = make_gym_env(self.variant)
        self.max_episode_steps: int | None = self.env.spec.max_episode_steps
        self.board: Board | None = None
        self.num_steps = 0
        self.action_space = FreeText(ACTION_MAX_LENGTH, min_length=0, charset=ACTION_CHARSET)
        self.observation_space = FreeText(
            OBSERVATION_MAX_LENGTH, min_length=0, charset=string.printable
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObservationText, dict[str, Any]]:
        """Start an episode; ``options={"task": task}`` starts from the task's seed.

        Returns:
            ``(observation, info)``; ``info`` has ``env_seed`` when a task gave one.
        """
        super().reset(seed=seed)
        env_seed = env_seed_of((options or {}).get("task"))
        info: dict[str, Any] = {}
        if env_seed is None:
            s, _ = self.env.reset(seed=seed)
        else:
            s, _ = self.env.reset(seed=env_seed)
            if seed is not None:
                self.env.unwrapped.np_random, _ = seeding.np_random(seed)
            info["env_seed"] = env_seed
        self.num_steps = 0
        self.board = decode(self.variant, int(s))
        return self._observation(), info

    def step(
        self, action: Action | str
    ) -> tuple[ObservationText, float, bool, bool, dict[str, Any]]:
        """Apply one action word.

        Returns:
            ``(observation, reward, terminated, truncated, info)``; ``info`` has
            ``action`` (the matched word or ``None``), ``invalid`` and, for valid
            actions, ``prob`` (probability of the sampled outcome).

        Raises:
            RuntimeError: ``step`` before ``reset``.
            TypeError: ``action`` is neither a ``str`` nor an ``Action``.
        """
        if self.board is None:
            raise RuntimeError("ClassicEnv.step called before reset()")
        text = action.text if isinstance(action, Action) else action
        if not isinstance(text, str):
            valid = ", ".join(self.variant.actions)
            raise TypeError(
                f"action must be a str or Action (one of: {valid}), got {type(action).__name__}"
            )
        word = text.strip().lower()
        self.num_steps += 1
        at_limit = self.max_episode_steps is not None and self.num_steps >= self.max_episode_steps
        index = self.variant.indices.get(word)
        if index is None:
            shown = " ".join(text.split())[:MAX_SHOWN]
            self.board = dataclasses.replace(self.board, reward=0.0, invalid=shown)
            info = {"action": None, "invalid": True}
            return self._observation(), 0.0, self.board.terminated, at_limit, info
        s, reward, terminated, truncated, gym_info = self.env.step(index)
        self.board = decode(self.variant, int(s), float(reward), bool(terminated))
        info = {"action": word, "invalid": False, "prob": float(gym_info.get("prob", 1.0))}
        return self._observation(), float(reward), bool(terminated), truncated or at_limit, info

    def _observation(self) -> ObservationText:
        assert self.board is not None
        return ObservationText(render(self.variant, self.board), state=self.board.as_state())

    def privileged_state(self) -> dict[str, Any] | None:
        """The decoded board of the last observation (``None`` before ``reset``): the same as
        the observation's ``state``, since the text draws all of it."""
        return None if self.board is None else self.board.as_state()

    def render(self) -> str | None:
        """With ``render_mode="ansi"``: the current observation text; else ``None``."""
        if self.render_mode != "ansi" or self.board is None:
            return None
        return render(self.variant, self.board)

    def close(self) -> None:
        """Close the Gymnasium environment."""
        self.env.close()
