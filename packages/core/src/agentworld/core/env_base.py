"""``EnvBase``: the part every real text environment repeats, owned once.

A domain's environment subclasses :class:`EnvBase` (a ``gymnasium.Env``) and writes what is its
own: :meth:`EnvBase.start` (set up the episode of a task, return the first observation) and
:meth:`EnvBase.transition` (one action). The base class draws the task (``options["task"]``,
a :class:`~agentworld.core.types.Task` or its dict, else one from ``tasks`` with a seed from
``np_random``, so ``reset(seed=s)`` picks the same task for the same ``s``), counts steps,
truncates at ``max_steps``, refuses a step outside an episode, and closes (:meth:`release`).
Authors check the result with ``gymnasium.utils.env_checker.check_env``.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any

import gymnasium

from agentworld.core.types import Action, Task

if TYPE_CHECKING:
    from agentworld.core.protocols import TaskSampler


class EnvBase(gymnasium.Env[Any, Action | str], metaclass=abc.ABCMeta):
    """A real environment's episode bookkeeping (module docstring).

    Attributes a subclass sets in its ``__init__``: ``tasks`` (a task sampler, or ``None``:
    an episode without ``options["task"]`` has no task) and ``max_steps`` (steps after which
    a step reports ``truncated``; ``None``: no limit). Read: :attr:`task`, :attr:`steps`,
    :attr:`done`.
    """

    tasks: TaskSampler | None = None
    max_steps: int | None = None
    task: Task | None = None
    steps: int = 0
    done: bool = True  # no episode running until reset

    @abc.abstractmethod
    def start(self, task: Task | None) -> tuple[Any, dict[str, Any]]:
        """Set up the episode of ``task``; ``(observation, info)`` of the reset."""

    @abc.abstractmethod
    def transition(self, action: Action | str) -> tuple[Any, float, bool, dict[str, Any]]:
        """One step of the running episode (:attr:`steps` already counts it):
        ``(observation, reward, terminated, info)``."""

    def release(self) -> None:
        """Free what the episode holds (a sandbox, a browser); called by :meth:`close`,
        possibly twice (default: nothing)."""

    def draw_task(self, options: dict[str, Any] | None) -> Task | None:
        """The episode's task: ``options["task"]`` (a Task or its dict), else one drawn from
        ``tasks`` with a seed from ``np_random``, else ``None``.

        Raises:
            pydantic.ValidationError: (a ``ValueError``) ``options["task"]`` is no task.
        """
        task = (options or {}).get("task")
        if task is None and self.tasks is not None:
            task = self.tasks.sample(1, seed=int(self.np_random.integers(2**31)))[0]
        return task if task is None or isinstance(task, Task) else Task.model_validate(task)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode: seed ``np_random`` (Gymnasium), draw the task, :meth:`start` it."""
        super().reset(seed=seed)
        self.done = True  # until start() has succeeded
        self.task, self.steps = self.draw_task(options), 0
        observation, info = self.start(self.task)
        self.done = False
        return observation, info

    def step(self, action: Action | str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """:meth:`transition`, with ``truncated`` once ``max_steps`` steps were taken.

        Raises:
            RuntimeError: no episode is running (never reset, or it has ended).
        """
        if self.done:
            raise RuntimeError("no episode is running (never reset, or it has ended): call reset()")
        self.steps += 1
        observation, reward, terminated, info = self.transition(action)
        truncated = not terminated and self.max_steps is not None and self.steps >= self.max_steps
        self.done = terminated or truncated
        return observation, reward, terminated, truncated, info

    def close(self) -> None:
        """End the episode and :meth:`release` what it holds. Idempotent."""
        self.done = True
        self.release()
        super().close()
