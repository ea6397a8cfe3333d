"""``SimEnv``: a Gymnasium environment whose transitions a world model predicts."""

from __future__ import annotations

import string
from typing import Any, ClassVar

import gymnasium as gym
from agentworld.core.env_checks import initial_text
from agentworld.core.gymvec import FreeText
from agentworld.core.protocols import Domain, WorldModel
from agentworld.core.textenv import action_text
from agentworld.core.types import Action, Task
from agentworld.sim.outcome import (
    check_parse_policy,
    resolve_reward_source,
    sample_steps,
    settle_step,
)
from agentworld.sim.simulator import Simulator

CHARSET = string.printable  # printable ASCII, space, \t \n \r \x0b \x0c
MAX_LENGTH = 8192


class SimEnv(gym.Env[str, str]):
    """A text environment simulated by a world model (Gymnasium 1.x API).

    Observations and actions are strings (``spaces.Text`` over printable ASCII
    with whitespace, 0 to ``max_length`` characters). Predicted observations
    are returned verbatim, so a model may emit characters outside the charset.
    ``reward`` and ``terminated`` come from ``reward_source`` (:mod:`agentworld.sim.outcome`:
    the model's reward footer, the domain's ``verify``, or none: ``0.0`` and ``False``).
    ``truncated`` is ``True`` once ``max_steps`` steps
    ran (``info["truncated_reason"] = "max_steps"``), when the answer did not parse
    (``"malformed"``, after ``max_retries`` new samples with ``on_parse_error="retry"``;
    the observation is then ``""``) or when the engine refused the step (``"error"``,
    message in ``info["error"]``). Unparsed answers are counted in ``parse_failures``.
    ``info`` carries ``raw`` (the last answer), ``parsed``, ``retries``, ``num_tokens``, ``turn``.

    Several ``SimEnv`` may share one world model or one :class:`Simulator`.

    Args:
        world_model: A :class:`WorldModel` or a :class:`Simulator` to step on.
        domain: Gives the system prompt (``domain.system_prompt(task)``) when none is passed.
        system_prompt: Default world-model system prompt.
        initial_observation: Default observation returned by ``reset`` (``None``:
            the domain's ``initial_observation(task)``, ``""`` when it answers ``None``).
        task: Default task.
        max_steps: Steps before truncation.
        max_new_tokens: Generation limit per step (tokens; ``None``: model default).
        max_length: Longest action/observation text of the spaces (characters).
        render_mode: ``None`` or ``"ansi"``.
        reward_source: ``"model"``, ``"verifier"``, ``"none"``, or ``None`` for the default
            (:func:`agentworld.sim.outcome.resolve_reward_source`).
        on_parse_error: ``"truncate"`` or ``"retry"`` (sample again; needs temperature > 0).
        max_retries: New samples per step with ``on_parse_error="retry"``.

    Raises:
        ValueError: a bad ``render_mode``, ``reward_source`` or ``on_parse_error``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        world_model: WorldModel | Simulator,
        *,
        domain: Domain | None = None,
        system_prompt: str | None = None,
        initial_observation: str | None = None,
        task: Task | None = None,
        max_steps: int = 50,
        max_new_tokens: int | None = None,
        max_length: int = MAX_LENGTH,
        render_mode: str | None = None,
        reward_source: str | None = None,
        on_parse_error: str = "truncate",
        max_retries: int = 2,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        check_parse_policy(on_parse_error, max_retries)
        if isinstance(world_model, Simulator):
            self.simulator = world_model
        else:
            self.simulator = Simulator(world_model, max_new_tokens=max_new_tokens)
        self.reward_source = resolve_reward_source(reward_source, domain, self.simulator.rewards)
        self.on_parse_error, self.max_retries = on_parse_error, max_retries
        self.parse_failures = 0
        self.domain, self.task = domain, task
        self.system_prompt, self.initial_observation = system_prompt, initial_observation
        self.max_steps = max_steps
        self.render_mode = render_mode
        self.observation_space = FreeText(max_length, min_length=0, charset=CHARSET)
        self.action_space = FreeText(max_length, min_length=0, charset=CHARSET)
        self.episode_id: str | None = None
        self._steps = 0
        self._done = False
        self._last_parsed = False
        self._task: Task | None = task
        self._transcript: list[str] = []

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start a new episode: ``(initial observation, info)``.

        ``options`` may override ``task``, ``initial_observation`` and ``system_prompt``.
        Without a task (none given here or to the constructor), a ``domain`` with a task
        sampler draws one with a seed from the environment's generator, as
        :class:`~agentworld.sim.SimVectorEnv` does: ``reset(seed=s)`` picks the same task
        for the same ``s`` (the task a real environment with the domain's sampler picks).
        """
        super().reset(seed=seed)
        options = options or {}
        task = options.get("task", self.task)
        if task is None and "task" not in options:
            task = self._draw_task()
        observation = options.get("initial_observation", self.initial_observation)
        if observation is None:  # the domain's, checked: a str (or None)
            observation = (initial_text(self.domain, task) if self.domain else None) or ""
        system_prompt = options.get("system_prompt", self.system_prompt)
        if system_prompt is None:
            system_prompt = self.domain.system_prompt(task) if self.domain is not None else ""
        if self.episode_id is not None:
            self.simulator.close_sync(self.episode_id)
        self.episode_id = self.simulator.open_sync(system_prompt, observation, task)
        self._steps, self._done, self._task, self._last_parsed = 0, False, task, False
        self._transcript = [self.simulator.messages(self.episode_id)[0]["content"]]
        return observation, {"episode_id": self.episode_id, "task_id": task.id if task else None}

    def _draw_task(self) -> Task | None:
        if not isinstance(self.domain, Domain):  # none, or a partial one: no task sampler
            return None
        return self.domain.tasks().sample(1, seed=int(self.np_random.integers(2**31)))[0]

    def step(self, action: Action | str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """One simulated transition on ``action`` (an :class:`Action`, the environment boundary
        of :mod:`agentworld.core.textenv`, or its text): ``(observation, reward, terminated,
        truncated, info)``.

        Raises:
            RuntimeError: ``reset`` was not called, or the episode already ended.
        """
        if self.episode_id is None or self._done:
            raise RuntimeError("call reset() before step() (the episode has ended or not started)")
        text = action_text(action)
        [(observation, info)], failures = sample_steps(
            self.simulator, [(self.episode_id, text)], self.on_parse_error, self.max_retries
        )
        self.parse_failures += failures
        self._steps += 1
        self._last_parsed = observation is not None
        reward, terminated, truncated = settle_step(
            observation, info, source=self.reward_source, domain=self.domain, task=self._task,
            steps=self._steps, max_steps=self.max_steps,
        )
        self._done = terminated or truncated
        self._transcript.append(f">>> {text}")
        self._transcript.append(
            observation if observation is not None else f"[malformed answer]\n{info['raw']}"
        )
        return observation or "", reward, terminated, truncated, info

    def anchor(self, observation: str, reward: float = 0.0, terminated: bool = False) -> bool:
        """Re-anchor the episode on a real transition: ``observation`` (with ``reward`` and
        ``terminated`` in the footer when the world model predicts one) replaces the last
        predicted observation in the world model's history, so the next step conditions on
        it. The episode ends when ``terminated``, after ``max_steps`` steps, or when the last
        answer did not parse (it left no turn to replace).

        Returns:
            Whether the episode has ended (a further ``step`` raises).

        Raises:
            RuntimeError: ``reset`` was not called, or no step was taken yet.
        """
        if self.episode_id is None or self._steps == 0:
            raise RuntimeError("anchor() needs a step of a started episode to replace")
        if self._last_parsed:
            self.simulator.replace_last(self.episode_id, observation, reward, terminated)
            self._transcript[-1] = observation
        self._done = terminated or not self._last_parsed or self._steps >= self.max_steps
        return self._done

    def render(self) -> str | None:
        """The transcript so far (system content, then ``>>> action`` and observation per step)."""
        if self.render_mode != "ansi":
            return None
        return "\n".join(self._transcript) + "\n"

    def close(self) -> None:
        """Close the simulated episode."""
        if self.episode_id is not None:
            self.simulator.close_sync(self.episode_id)
            self.episode_id = None
