"""``SimVectorEnv``: N simulated episodes stepped together as one Gymnasium ``VectorEnv``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from agentworld.core.env_checks import initial_text
from agentworld.core.gymvec import FreeText
from agentworld.core.protocols import Domain, WorldModel
from agentworld.core.textenv import action_text
from agentworld.core.types import Action, Task
from agentworld.sim.env import CHARSET, MAX_LENGTH
from agentworld.sim.outcome import (
    check_parse_policy,
    resolve_reward_source,
    sample_steps,
    settle_step,
)
from agentworld.sim.simulator import Simulator
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

InitialObservation = str | Sequence[str] | Callable[[Task | None], str]
IsTerminal = Callable[[str, str], bool]


@dataclass(slots=True)
class _Slot:
    """One sub-environment: its current episode and whether it resets on the next step."""

    episode_id: str | None = None
    task: Task | None = None
    steps: int = 0
    needs_reset: bool = False


class SimVectorEnv(VectorEnv):
    """``num_envs`` text episodes on one world model, all stepped in one batched call.

    Gymnasium 1.x ``VectorEnv`` with ``metadata["autoreset_mode"] = NEXT_STEP``:
    the step after a sub-environment terminated or truncated ignores its action
    and resets it (observation = the new initial observation, reward ``0.0``,
    ``terminated = truncated = False``, info of the reset). The other
    sub-environments' actions go to the world model as one
    :meth:`Simulator.step_many` call, i.e. one batched ``predict``.

    Spaces: each sub-environment has ``spaces.Text`` observations and actions (as
    :class:`~agentworld.sim.env.SimEnv`); the batched spaces are ``Tuple`` of
    ``num_envs`` of them, so observations are a ``tuple[str, ...]`` ``[num_envs]``
    and actions any sequence of ``num_envs`` :class:`~agentworld.core.types.Action` or strings. ``rewards`` ``[num_envs]``
    float64 and ``terminations`` ``[num_envs]`` bool come from ``reward_source`` as in
    :class:`~agentworld.sim.env.SimEnv` (or ``is_terminal``); ``truncations``
    ``[num_envs]`` bool. ``infos`` is Gymnasium's dict of arrays
    with ``_key`` masks: ``episode_id``, ``task_id`` after a reset; ``raw``,
    ``parsed``, ``retries``, ``num_tokens``, ``turn``, ``episode_id`` after a step, and
    ``truncated_reason`` (``"max_steps"``, ``"malformed"`` or ``"error"``) where truncated.
    Unparsed answers are retried (``on_parse_error="retry"``, all failed sub-environments
    in one more batch) or truncate, and are counted in ``parse_failures``.

    Each new episode of sub-environment ``i`` takes ``tasks[i]`` when given, else
    a task sampled from ``domain.tasks()`` with a seed drawn from that
    sub-environment's generator (seeded by ``reset(seed=...)``), else none; its
    system prompt is ``system_prompt`` (or its ``[i]``), else
    ``domain.system_prompt(task)``, else ``""``; its initial observation is
    ``initial_observation`` (a string, its ``[i]``, or a function of the task).

    Args:
        world_model: A :class:`WorldModel` or a shared :class:`Simulator`.
        num_envs: Number of sub-environments (episodes stepped together).
        domain: Task sampler and system prompts.
        tasks: ``[num_envs]`` tasks, one per sub-environment.
        system_prompt: One prompt, or ``[num_envs]``.
        initial_observation: One text, ``[num_envs]`` texts, or ``task -> text``
            (``None``: the domain's ``initial_observation(task)``, ``""`` when it answers
            ``None`` or there is no domain).
        max_steps: Steps before an episode is truncated.
        max_new_tokens: Generation limit per step (tokens; ``None``: model default).
        max_length: Longest action/observation text of the spaces (characters).
        is_terminal: ``(action, observation) -> bool`` marking an episode terminated
            (e.g. the agent typed ``exit``), or'ed with the reward source's termination.
        reward_source: ``"model"``, ``"verifier"``, ``"none"`` or ``None`` (default as in
            :func:`agentworld.sim.outcome.resolve_reward_source`).
        on_parse_error: ``"truncate"`` or ``"retry"``.
        max_retries: New samples per step with ``on_parse_error="retry"``.

    Raises:
        ValueError: ``num_envs < 1`` or a per-sub-environment list has the wrong length.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        world_model: WorldModel | Simulator,
        num_envs: int,
        *,
        domain: Domain | None = None,
        tasks: Sequence[Task] | None = None,
        system_prompt: str | Sequence[str] | None = None,
        initial_observation: InitialObservation | None = None,
        max_steps: int = 50,
        max_new_tokens: int | None = None,
        max_length: int = MAX_LENGTH,
        is_terminal: IsTerminal | None = None,
        reward_source: str | None = None,
        on_parse_error: str = "truncate",
        max_retries: int = 2,
    ):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        check_parse_policy(on_parse_error, max_retries)
        if initial_observation is None and domain is not None:
            initial_observation = lambda task: initial_text(domain, task) or ""  # noqa: E731
        elif initial_observation is None:
            initial_observation = ""
        per_env = {"tasks": tasks, "system_prompt": system_prompt}
        if not callable(initial_observation):
            per_env["initial_observation"] = initial_observation
        for name, value in per_env.items():
            if (
                isinstance(value, Sequence)
                and not isinstance(value, str)
                and len(value) != num_envs
            ):
                raise ValueError(
                    f"{name} needs {num_envs} items (one per sub-env), got {len(value)}"
                )
        if isinstance(world_model, Simulator):
            self.simulator = world_model
        else:
            self.simulator = Simulator(world_model, max_new_tokens=max_new_tokens)
        self.reward_source = resolve_reward_source(reward_source, domain, self.simulator.rewards)
        self.on_parse_error, self.max_retries = on_parse_error, max_retries
        self.parse_failures = 0
        self.num_envs = num_envs
        self.domain, self.tasks = domain, tasks
        self.system_prompt, self.initial_observation = system_prompt, initial_observation
        self.max_steps, self.is_terminal = max_steps, is_terminal
        self.single_observation_space = FreeText(max_length, min_length=0, charset=CHARSET)
        self.single_action_space = FreeText(max_length, min_length=0, charset=CHARSET)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._slots = [_Slot() for _ in range(num_envs)]
        self._rngs = [np.random.default_rng() for _ in range(num_envs)]
        self._observations: list[str] = [""] * num_envs

    # -- Gymnasium API ------------------------------------------------------------------------

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        """Start new episodes: ``(observations [num_envs], infos)``.

        Args:
            seed: ``int`` seeds sub-environment ``i`` with ``seed + i``; a list gives
                one seed (or ``None``) per sub-environment.
            options: ``{"reset_mask": bool array [num_envs]}`` resets only those
                sub-environments (the others keep their episode and observation).

        Raises:
            ValueError: A seed list or reset mask of the wrong length, or an all-false mask.
        """
        super().reset(seed=seed if isinstance(seed, int) else None)
        seeds = self._seeds(seed)
        mask = np.ones(self.num_envs, dtype=np.bool_)
        if options and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"], dtype=np.bool_)
            if mask.shape != (self.num_envs,) or not mask.any():
                raise ValueError(f"reset_mask must be a bool array [{self.num_envs}] with a True")
        infos: dict[str, Any] = {}
        for i in np.flatnonzero(mask):
            if seeds[i] is not None:
                self._rngs[i] = np.random.default_rng(seeds[i])
            infos = self._add_info(infos, self._reset_slot(int(i)), int(i))
        return tuple(self._observations), infos

    def step(
        self, actions: Sequence[Action | str]
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One transition of every sub-environment, the world model's share in one batch.
        ``actions[i]`` is an :class:`~agentworld.core.types.Action` (its ``text`` is what the
        world model reads) or the text itself.

        Returns:
            ``(observations [num_envs], rewards [num_envs], terminations [num_envs],
            truncations [num_envs], infos)``.

        Raises:
            ValueError: ``actions`` does not have ``num_envs`` items.
            RuntimeError: ``reset`` was not called.
        """
        if len(actions) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got {len(actions)}")
        if any(slot.episode_id is None for slot in self._slots):
            raise RuntimeError("call reset() before step()")
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        infos: dict[str, Any] = {}
        stepping = []
        for i, slot in enumerate(self._slots):
            if slot.needs_reset:
                infos = self._add_info(infos, self._reset_slot(i), i)
            else:
                stepping.append(i)
        texts = [action_text(a) for a in actions]
        pairs = [(self._slots[i].episode_id, texts[i]) for i in stepping]
        results, failures = sample_steps(
            self.simulator, pairs, self.on_parse_error, self.max_retries  # type: ignore[arg-type]
        )
        self.parse_failures += failures
        for i, (observation, info) in zip(stepping, results, strict=True):
            slot = self._slots[i]
            slot.steps += 1
            info["episode_id"] = slot.episode_id
            terminal = self.is_terminal
            rewards[i], terminations[i], truncations[i] = settle_step(
                observation, info, source=self.reward_source, domain=self.domain, task=slot.task,
                steps=slot.steps, max_steps=self.max_steps,
                is_terminal=None if terminal is None else partial(terminal, texts[i]),
            )
            slot.needs_reset = bool(terminations[i] or truncations[i])
            self._observations[i] = observation or ""
            infos = self._add_info(infos, info, i)
        return tuple(self._observations), rewards, terminations, truncations, infos

    def close_extras(self, **kwargs: Any) -> None:
        """Close every sub-environment's episode in the simulator."""
        for slot in self._slots:
            if slot.episode_id is not None:
                self.simulator.close_sync(slot.episode_id)
                slot.episode_id = None

    # -- helpers --------------------------------------------------------------------------------

    def episode_ids(self) -> list[str | None]:
        """Simulator episode id of each sub-environment ``[num_envs]`` (``None`` before reset)."""
        return [slot.episode_id for slot in self._slots]

    def _seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int):
            return [seed + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ValueError(f"a seed list needs {self.num_envs} items, got {len(seed)}")
        return list(seed)

    def _pick(self, value: Any, i: int) -> Any:
        return value if value is None or isinstance(value, str) else value[i]

    def _reset_slot(self, i: int) -> dict[str, Any]:
        """Close sub-environment ``i``'s episode, open a new one; its reset info."""
        slot = self._slots[i]
        if slot.episode_id is not None:
            self.simulator.close_sync(slot.episode_id)
        task = self._pick(self.tasks, i)
        if task is None and self.domain is not None:
            task_seed = int(self._rngs[i].integers(2**31))
            task = self.domain.tasks().sample(1, seed=task_seed)[0]
        system_prompt = self._pick(self.system_prompt, i)
        if system_prompt is None:
            system_prompt = self.domain.system_prompt(task) if self.domain is not None else ""
        if callable(self.initial_observation):
            observation = self.initial_observation(task)
        else:
            observation = self._pick(self.initial_observation, i)
        slot.episode_id = self.simulator.open_sync(system_prompt, observation, task)
        slot.task, slot.steps, slot.needs_reset = task, 0, False
        self._observations[i] = observation
        return {"episode_id": slot.episode_id, "task_id": task.id if task is not None else None}
