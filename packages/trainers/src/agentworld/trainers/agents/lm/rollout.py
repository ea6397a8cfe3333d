"""Multi-turn rollouts of a language-model policy through the sim runtime's paged engine.

``G`` environment instances per task are reset with the same task and seed (the same
initial state); their episodes advance turn by turn in lockstep: every running episode's
next action is one request of a continuous batch on the :class:`~agentworld.sim.engine.
EngineLoop`, then the environments step in a thread pool (the turns are the steps of
:func:`agentworld.core.rollout.rollout`, this class its batched policy). Each episode is
pinned in the engine under its own episode id, so a turn prefills only the new observation; when the
``G`` first prompts of a group are equal, the prompt is prefilled once and forked ``G``
times (shared KV blocks, as :func:`agentworld.trainers.world_model.rl_data.generate_groups` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from agentworld.core.protocols import EnvironmentBatch
from agentworld.core.rollout import Outcome, RolloutEpisode, Transition, rollout, text_of
from agentworld.core.types import Action, Task
from agentworld.sim.engine import EngineLoop
from agentworld.sim.sampling import SamplingParams
from agentworld.trainers.agents.lm.data import (
    AGENT_PROMPT,
    ChatTokens,
    EpisodeStatus,
    Trajectory,
    first_action,
    observation_text,
    system_message,
)

ActionType = Literal["auto", "action", "text"]


class AgentRollouts:
    """Runs groups of episodes of the policy behind ``loop`` in ``envs``.

    Args:
        loop: The engine running the policy's current weights.
        tokenizer: The policy's tokenizer (chat template required).
        stop_ids: Token ids that end an action (``<|im_end|>``, eos).
        envs: Environments (``Environment`` protocol), at least ``groups * group_size``; or
            an :class:`~agentworld.core.protocols.EnvironmentBatch` of exactly that many (e.g.
            :class:`~agentworld.core.ray_envs.RayEnvironments`: the environments on Ray
            actors, the policy here; an episode re-run after its actor died is marked in
            :attr:`Trajectory.retried`).
        group_size: Episodes per task ``G``.
        max_turns: Actions per episode at most.
        max_action_tokens: Tokens per action at most.
        max_seq_len: Transcript length limit (tokens); an episode whose next turn would
            not fit ends with :attr:`EpisodeStatus.CONTEXT`.
        temperature, top_p, top_k: Sampling parameters of actions.
        agent_prompt: Appended to the task instruction in the system message.
        action_type: ``"action"`` and ``"auto"`` send ``agentworld.core.types.Action``
            objects (the environment boundary, :mod:`agentworld.core.textenv`; wrap a
            Gymnasium ``Text`` env in ``TextActions``); ``"text"`` plain strings.
        workers: Threads stepping environments (and resetting them) concurrently.
    """

    def __init__(
        self,
        loop: EngineLoop,
        tokenizer: Any,
        stop_ids: frozenset[int],
        envs: Sequence[Any] | EnvironmentBatch,
        *,
        group_size: int,
        max_turns: int,
        max_action_tokens: int,
        max_seq_len: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        agent_prompt: str = AGENT_PROMPT,
        action_type: ActionType = "auto",
        workers: int = 8,
    ):
        self.loop, self.tokenizer, self.stop_ids = loop, tokenizer, stop_ids
        self.chat = ChatTokens(tokenizer)
        self.envs = envs if isinstance(envs, EnvironmentBatch) else list(envs)
        self.group_size, self.max_turns = group_size, max_turns
        self.max_action_tokens, self.max_seq_len = max_action_tokens, max_seq_len
        self.sampling = (temperature, top_p, top_k)
        self.agent_prompt, self.action_type, self.workers = agent_prompt, action_type, workers

    def run(
        self,
        tasks: Sequence[Task],
        reset_seeds: Sequence[int],
        sample_seeds: Sequence[int],
        tag: str,
    ) -> list[Trajectory]:
        """Roll out ``G`` episodes of each task until terminated, truncated or out of turns.

        Args:
            tasks: ``[num_groups]`` tasks, one per group.
            reset_seeds: ``[num_groups]`` reset seeds (the ``G`` envs of a group share one).
            sample_seeds: ``[num_groups * G * max_turns]`` sampling seeds, one per action.
            tag: Episode-id prefix unique among the engine's open episodes.

        Returns:
            ``[num_groups * G]`` trajectories, the ``G`` of a group consecutive.

        Raises:
            ValueError: more episodes than environments (for a batch: not as many), or a
                task's first prompt leaves no room for an action within ``max_seq_len``.
            RuntimeError: the engine failed a request (e.g. the KV pool is too small).
        """
        g = self.group_size
        n = len(tasks) * g
        batch = isinstance(self.envs, EnvironmentBatch)
        if n > len(self.envs) or (batch and n != len(self.envs)):
            raise ValueError(f"{n} episodes need {n} environments, {len(self.envs)} given")
        assert len(reset_seeds) == len(tasks) and len(sample_seeds) == n * self.max_turns
        trajectories: list[Trajectory] = []
        stops: dict[int, str | None] = {}  # text of the stop token that ended k's last action
        episodes = [f"{tag}/{k}" for k in range(n)]
        parents = [f"{tag}/parent{j}" for j in range(len(tasks))]

        def policy(running: Sequence[RolloutEpisode]) -> list[Any]:
            """One action per running episode (one continuous batch on the engine); ``None``
            where the next turn would not fit (``EpisodeStatus.CONTEXT``)."""
            if not trajectories:  # the first turn: every episode has just been reset
                trajectories.extend(self._start(e) for e in running)
                self._fork_groups(trajectories, episodes, parents)
            else:
                for e in running:
                    ids = self.chat.next_turn(observation_text(e.observation), stops[e.index])
                    t = trajectories[e.index]
                    if len(t.token_ids) + len(ids) + self.max_action_tokens > self.max_seq_len:
                        t.status = EpisodeStatus.CONTEXT
                    else:
                        t.append_context(ids)
            active = [e.index for e in running if not trajectories[e.index].is_finished]
            turn = running[0].num_steps  # lockstep: every running episode is at this turn
            acted = self._act(trajectories, episodes, active, sample_seeds, turn)
            stops.update((k, stop) for k, (_, stop) in acted.items())
            return [self._wrap(e.index, acted[e.index][0]) if e.index in acted else None
                    for e in running]

        def record(episode: RolloutEpisode, step: Transition) -> None:
            """Record one environment step of ``episode`` in its trajectory (or end it)."""
            t = trajectories[episode.index]
            t.actions.append(text_of(step.action))
            t.rewards.append(step.reward)
            if step.info.get("parsed") is False:
                t.parse_failures += 1
            t.retried = max(t.retried, int(step.info.get("retried", 0)))
            if isinstance(step.info.get("success"), bool):
                t.success = step.info["success"]
            if step.terminated:
                t.status = EpisodeStatus.TERMINATED
            elif step.truncated:
                t.status = EpisodeStatus.TRUNCATED
            elif episode.outcome is Outcome.MAX_STEPS:
                t.status = EpisodeStatus.MAX_TURNS

        try:
            rollout(
                self.envs if isinstance(self.envs, EnvironmentBatch) else self.envs[:n],
                policy,
                self.max_turns,
                tasks=[tasks[k // g] for k in range(n)],
                seeds=[reset_seeds[k // g] for k in range(n)],
                on_step=record,
                workers=max(1, min(self.workers, n)),
            )
        finally:
            closes = [self.loop.close_episode(e) for e in episodes + parents]
            for close in closes:
                close.exception()  # a parent never prefilled is unknown: nothing to close
        return trajectories

    def _start(self, episode: RolloutEpisode) -> Trajectory:
        """The trajectory of a just reset episode: its first prompt.

        Raises:
            ValueError: the prompt leaves no room for an action within ``max_seq_len``.
        """
        task = episode.task
        system = system_message(task, self.agent_prompt)
        ids = self.chat.first_prompt(system, observation_text(episode.initial_observation))
        if len(ids) + self.max_action_tokens > self.max_seq_len:
            raise ValueError(
                f"task {task.id!r}: the first prompt has {len(ids)} tokens; with "
                f"max_action_tokens={self.max_action_tokens} it exceeds "
                f"max_seq_len={self.max_seq_len}"
            )
        t = Trajectory(episode.index // self.group_size, ids)
        t.retried = int(episode.reset_info.get("retried", 0))
        return t

    def _fork_groups(
        self, trajectories: list[Trajectory], episodes: list[str], parents: list[str]
    ) -> None:
        """Prefill group ``j``'s first prompt once as episode ``parents[j]`` and fork it to
        the group's episodes, when all ``G`` first prompts are equal."""
        g = self.group_size
        groups = range(len(trajectories) // g)
        shared = [
            j
            for j in groups
            if all(
                trajectories[j * g + i].token_ids == trajectories[j * g].token_ids for i in range(g)
            )
        ]
        prefill = SamplingParams(max_new_tokens=1)
        done = [
            self.loop.submit(trajectories[j * g].token_ids, prefill, parents[j]) for j in shared
        ]
        _check([f.result() for f in done])
        forks = [self.loop.fork(parents[j], episodes[j * g + i]) for j in shared for i in range(g)]
        for fork in forks:
            fork.result()

    def _act(
        self,
        trajectories: list[Trajectory],
        episodes: list[str],
        active: list[int],
        sample_seeds: Sequence[int],
        turn: int,
    ) -> dict[int, tuple[str, str | None]]:
        """Sample one action for each ``active`` episode (one continuous batch) and append
        its tokens; returns ``(action text, text of the stop token or None)`` by episode."""
        temperature, top_p, top_k = self.sampling
        futures = {}
        for k in active:
            params = SamplingParams(
                self.max_action_tokens,
                temperature,
                top_p,
                top_k,
                seed=sample_seeds[k * self.max_turns + turn],
                logprobs=True,
            )
            futures[k] = self.loop.submit(trajectories[k].token_ids, params, episodes[k])
        outputs = {k: f.result() for k, f in futures.items()}
        _check(list(outputs.values()))
        actions = {}
        for k, out in outputs.items():
            assert out.logprobs is not None and len(out.logprobs) == len(out.token_ids)
            t = trajectories[k]
            t.append_action(out.token_ids, out.logprobs)
            ids = out.token_ids
            stopped = out.finish_reason == "stop" and bool(ids) and ids[-1] in self.stop_ids
            body = ids[:-1] if stopped else ids
            action = first_action(self.tokenizer.decode(body, skip_special_tokens=True))
            actions[k] = (action, self.tokenizer.decode(ids[-1:]) if stopped else None)
        return actions

    def _wrap(self, k: int, action: str) -> Any:
        return action if self.action_type == "text" else Action(text=action)


def _check(outputs: Sequence[Any]) -> None:
    failed = [o.error for o in outputs if o.finish_reason == "error"]
    if failed:
        raise RuntimeError(f"{len(failed)} policy request(s) failed, first: {failed[0]}")
