"""Many simulated episodes on one world model, with their steps batched together.

Each episode keeps its chat history: the system message (domain prompt, task
and initial observation, exactly as :func:`agentworld.core.formats.system_message`
renders them for training), then per step the user's action and the
assistant's ``<predicted_observation>`` block.

A world model with the session API (:class:`~agentworld.core.world_models.SessionWorldModel`,
e.g. the ``hf`` backend's) holds each episode's history itself, as text beside the engine's
tokens: a step sends only the new action, and the engine batches concurrent steps (there is
no batching here). Any other :class:`WorldModel` is sent whole histories: concurrent
:meth:`Simulator.step` calls are gathered into one ``predict`` call
(:class:`~agentworld.sim.batcher.Batcher`), with ``episode_ids`` when it is an
:class:`~agentworld.core.world_models.EpisodicWorldModel` (whose ``close_episode`` /
``fork_episode`` then release or share per-episode state). A request that failed alone is a
:class:`FailedPrediction`.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from agentworld.core.formats import (
    Transition,
    parse_transition,
    system_message,
    window_messages,
    wrap_observation,
)
from agentworld.core.protocols import WorldModel
from agentworld.core.textenv import action_text
from agentworld.core.types import Action, Episode, Observation, Prediction, Task
from agentworld.core.world_models import (
    CardedWorldModel,
    EpisodicWorldModel,
    SessionWorldModel,
)
from agentworld.sim.batcher import Batcher
from agentworld.sim.sim_records import FailedPrediction as FailedPrediction  # re-exported
from agentworld.sim.sim_records import EpisodeState, Message, PendingStep, step_info

StepResult = tuple[str | None, dict[str, Any]]


class Simulator:
    """Episodes stepped by a shared :class:`WorldModel`.

    A step whose answer has no observation block returns ``(None, info)`` with
    ``info["parsed"] = False`` and leaves the history unchanged, so the step can
    be retried (useful with sampling). ``info`` holds ``raw`` (the answer text),
    ``parsed``, ``num_tokens`` (generated tokens) and ``turn`` (0-based step index); with a
    served world model that names its server process (``Prediction.served_by``), also
    ``served_by``, and ``replica_changed = True`` on a step answered by another process than
    the episode's previous step (behind a router: a replica died or stalled and the request
    was retried elsewhere, or the router rebalanced; the episode's prefix cache was lost).
    A step whose request failed alone (a :class:`FailedPrediction`) raises
    ``RuntimeError`` from :meth:`step` (``step_many`` returns ``(None, info)`` with
    ``info["error"]``); the history is unchanged and other episodes go on.
    A step cancelled while waiting is dropped; one cancelled once sent to the world model
    is still recorded in the history.

    With ``rewards`` an answer must also carry the reward footer
    (:func:`agentworld.core.formats.parse_transition`); ``info`` then has ``reward``
    (float) and ``terminated`` (bool), and an answer without a valid footer is unparsed
    like one without a block. With ``history_window`` each request shows the model only
    the last ``history_window`` turns (the episode's full history is still kept).

    Args:
        world_model: A :class:`SessionWorldModel`, or anything with
            ``predict(requests, *, max_new_tokens)``.
        max_batch: Most steps per ``predict`` call (not used with sessions).
        max_wait_s: How long the batcher waits for more steps (seconds; not used with
            sessions).
        max_new_tokens: Generation limit per step (``None``: model default).
        rewards: Answers carry the reward footer (``None``: the world model's ``rewards``
            when it is a :class:`~agentworld.core.world_models.CardedWorldModel`, e.g. from its
            checkpoint card, else ``False``).
        history_window: Turns of history per request (``None``: the world model's
            ``history_window`` when it is a ``CardedWorldModel``, else the whole history).
    """

    def __init__(
        self,
        world_model: WorldModel,
        *,
        max_batch: int = 64,
        max_wait_s: float = 0.005,
        max_new_tokens: int | None = None,
        rewards: bool | None = None,
        history_window: int | None = None,
    ):
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        carded = isinstance(world_model, CardedWorldModel)
        if rewards is None:
            rewards = bool(world_model.rewards) if carded else False
        if history_window is None and carded:
            history_window = world_model.history_window
        if history_window is not None and history_window < 0:
            raise ValueError(f"history_window must be >= 0 turns, got {history_window}")
        self.rewards, self.history_window = rewards, history_window
        self.world_model = world_model
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.max_new_tokens = max_new_tokens
        self._episodes: dict[str, EpisodeState] = {}
        self._lock = threading.Lock()
        self._sessions = isinstance(world_model, SessionWorldModel)
        self._episodic = isinstance(world_model, EpisodicWorldModel)
        self._batcher: Batcher[PendingStep, StepResult] = Batcher(
            self._run_steps, max_batch=max_batch, max_wait_s=max_wait_s
        )

    # -- episodes ---------------------------------------------------------------------------

    def open_sync(
        self, system_prompt: str, initial_observation: str, task: Task | None = None
    ) -> str:
        """Start an episode and return its id."""
        episode = Episode(
            domain=task.domain if task else "",
            task=task,
            system_prompt=system_prompt,
            initial_observation=Observation(text=initial_observation),
        )
        system = system_message(episode)
        if self._sessions:
            assert isinstance(self.world_model, SessionWorldModel)
            session = self.world_model.open_session(
                system,
                rewards=self.rewards,
                history_window=self.history_window,
                episode_id=episode.id,
            )
            state = EpisodeState(session, [])
        else:
            state = EpisodeState(None, [{"role": "system", "content": system}])
        with self._lock:
            self._episodes[episode.id] = state
        return episode.id

    def fork_sync(self, episode_id: str) -> str:
        """A new episode with a copy of ``episode_id``'s history (and, through the world
        model's ``fork_episode``, of its KV cache). Raises ``KeyError`` if unknown."""
        with self._lock:
            source = self._get(episode_id)
            if source.session is not None:
                child = source.session.fork()
                new_id = child.episode_id
                self._episodes[new_id] = EpisodeState(child, [], source.turns)
                return new_id
            new_id = uuid.uuid4().hex
            self._episodes[new_id] = EpisodeState(None, list(source.messages), source.turns)
        if self._episodic:
            self.world_model.fork_episode(episode_id, new_id)  # type: ignore[attr-defined]
        return new_id

    def close_sync(self, episode_id: str) -> None:
        """Forget an episode and release its state in the world model (``close_episode``);
        a step in flight still returns. Unknown ids are ignored."""
        with self._lock:
            state = self._episodes.pop(episode_id, None)
        if state is not None and state.session is not None:
            state.session.close()
        elif state is not None and self._episodic:
            self.world_model.close_episode(episode_id)  # type: ignore[attr-defined]

    def messages(self, episode_id: str) -> list[Message]:
        """A copy of the episode's chat history. Raises ``KeyError`` if unknown."""
        with self._lock:
            state = self._get(episode_id)
            if state.session is None:
                return [dict(m) for m in state.messages]
        return state.session.messages()

    def replace_last(
        self, episode_id: str, observation: str, reward: float | None = None,
        terminated: bool | None = None,
    ) -> None:
        """Put ``observation`` (with the footer ``reward``/``terminated`` when the simulator
        predicts rewards) in place of the last turn's predicted observation, as
        :func:`~agentworld.core.formats.wrap_observation` writes it: the episode's next step
        conditions on it (re-anchoring on a real observation).

        Raises:
            KeyError: ``episode_id`` is unknown.
            RuntimeError: the episode has a step in flight.
            ValueError: the episode has no turn yet.
        """
        if self.rewards:
            answer = wrap_observation(observation, reward=reward or 0.0, terminated=bool(terminated))
        else:
            answer = wrap_observation(observation)
        with self._lock:
            state = self._get(episode_id)
            if state.busy:
                raise RuntimeError(f"episode {episode_id!r} has a step in flight")
            if state.session is None:
                if len(state.messages) < 3:
                    raise ValueError("replace_last needs a turn in the history; none was taken yet")
                state.messages[-1] = {"role": "assistant", "content": answer}
                return
            session = state.session
        session.replace_last(answer)

    def __len__(self) -> int:
        return len(self._episodes)

    async def open(
        self, system_prompt: str, initial_observation: str, task: Task | None = None
    ) -> str:
        """Start an episode and return its id."""
        return self.open_sync(system_prompt, initial_observation, task)

    async def fork(self, episode_id: str) -> str:
        """A new episode with a copy of ``episode_id``'s history and KV; returns its id."""
        return self.fork_sync(episode_id)

    async def close(self, episode_id: str) -> None:
        """Forget an episode and release its KV."""
        self.close_sync(episode_id)

    # -- stepping ---------------------------------------------------------------------------

    def step_many(self, pairs: Sequence[tuple[str, Action | str]]) -> list[StepResult]:
        """Step ``[batch]`` ``(episode_id, action)`` pairs (an :class:`Action` or its text)
        together (one ``predict`` call, or one engine batch with sessions).

        A pair whose request failed alone returns ``(None, info)`` with ``info["error"]``.

        Raises:
            KeyError: An episode id is unknown.
            RuntimeError: An episode appears twice or already has a step in flight.
        """
        steps = self._reserve([episode_id for episode_id, _ in pairs], [a for _, a in pairs])
        if self._sessions:
            return self._run_sessions(steps)
        return self._run_steps(steps)

    async def step(self, episode_id: str, action: Action | str) -> StepResult:
        """``(observation or None, info)`` after ``action`` (or its text), batched with others.

        Raises:
            KeyError: ``episode_id`` is unknown or closed before its step ran.
            RuntimeError: The episode already has a step in flight, or its request failed
                alone (the message says why; other episodes are unaffected).
        """
        [step] = self._reserve([episode_id], [action])
        try:
            if self._sessions:
                result = await self._append(step)
            else:
                result = await self._batcher.submit(step)
        except asyncio.CancelledError:
            if not step.started:  # dropped before it ran: release the episode
                self._release([step])
            raise
        if "error" in result[1]:
            message = f"step of episode {episode_id!r} failed: {result[1]['error']}"
            raise RuntimeError(message)
        return result

    # -- history bookkeeping ----------------------------------------------------------------

    def _get(self, episode_id: str) -> EpisodeState:
        try:
            return self._episodes[episode_id]
        except KeyError:
            raise KeyError(f"unknown episode {episode_id!r} (closed or never opened)") from None

    def _reserve(self, ids: Sequence[str], actions: Sequence[Action | str]) -> list[PendingStep]:
        with self._lock:
            episodes = [self._get(i) for i in ids]
            if len(set(ids)) != len(ids) or any(e.busy for e in episodes):
                raise RuntimeError("an episode may have only one step in flight")
            for episode in episodes:
                episode.busy = True
        return [PendingStep(i, action_text(a)) for i, a in zip(ids, actions, strict=True)]

    def _release(self, steps: Sequence[PendingStep]) -> None:
        with self._lock:
            for step in steps:
                if step.episode_id in self._episodes:
                    self._episodes[step.episode_id].busy = False

    async def _append(self, step: PendingStep) -> StepResult:
        """One session step. Its bookkeeping runs when the prediction arrives, even if the
        caller stopped waiting (the world model records the turn all the same)."""
        with self._lock:
            session = self._get(step.episode_id).session
        assert session is not None
        try:
            future = session.append(step.action, max_new_tokens=self.max_new_tokens)
        except BaseException:
            self._release([step])
            raise
        step.started = True
        finished: Future[StepResult] = Future()

        def finish(done: Future[Prediction]) -> None:
            try:
                [result] = self._finish([step], [done.result()])
            except BaseException as error:  # noqa: BLE001 -- handed to the caller
                self._release([step])
                finished.set_exception(error)
            else:
                finished.set_result(result)

        future.add_done_callback(finish)
        return await asyncio.shield(asyncio.wrap_future(finished))

    def _run_sessions(self, steps: Sequence[PendingStep]) -> list[StepResult]:
        """Append every step to its session (the engine batches them) and wait for all."""
        with self._lock:
            sessions = [self._get(s.episode_id).session for s in steps]
        futures = []
        try:
            for step, session in zip(steps, sessions, strict=True):
                assert session is not None
                futures.append(session.append(step.action, max_new_tokens=self.max_new_tokens))
                step.started = True
        finally:
            self._release(steps[len(futures) :])
        errors = [f.exception() for f in futures]
        if any(e is not None for e in errors):
            self._release(steps)
            raise next(e for e in errors if e is not None)
        return self._finish(steps, [f.result() for f in futures])

    def _run_steps(self, steps: Sequence[PendingStep]) -> list[StepResult]:
        """Predict for reserved episodes kept here, commit the results, release them."""
        try:
            with self._lock:
                for step in steps:
                    step.started = True
                requests = [
                    window_messages(
                        [*self._get(s.episode_id).messages, {"role": "user", "content": s.action}],
                        self.history_window,
                    )
                    for s in steps
                ]
            if self._episodic:
                predictions = self.world_model.predict(  # type: ignore[call-arg]
                    requests,
                    max_new_tokens=self.max_new_tokens,
                    episode_ids=[s.episode_id for s in steps],
                )
            else:
                predictions = self.world_model.predict(requests, max_new_tokens=self.max_new_tokens)
        except BaseException:
            self._release(steps)
            raise
        return self._finish(steps, predictions)

    def _finish(
        self, steps: Sequence[PendingStep], predictions: Sequence[Prediction]
    ) -> list[StepResult]:
        """Results ``[batch]``; histories kept here get the parsed turns; episodes released.
        A session's prediction was parsed (and its history updated) by the world model."""
        results: list[StepResult] = []
        with self._lock:
            for step, prediction in zip(steps, predictions, strict=True):
                episode = self._episodes.get(step.episode_id)
                if episode is not None and episode.session is not None:
                    observation = prediction.observation
                    reward, terminated = prediction.reward, prediction.terminated
                    parsed = observation is not None and (not self.rewards or reward is not None)
                else:
                    transition = None
                    if prediction.observation is not None and not self.rewards:
                        transition = Transition(prediction.observation)
                    elif prediction.observation is not None:
                        transition = parse_transition(prediction.text, rewards=True)
                    parsed = transition is not None
                    observation = transition.observation if transition else None
                    reward = transition.reward if transition else None
                    terminated = transition.terminated if transition else None
                info = step_info(prediction, episode, parsed)
                if parsed and self.rewards:
                    info["reward"], info["terminated"] = reward, terminated
                if episode is not None:
                    episode.busy = False
                    if parsed:
                        episode.turns += 1
                        if episode.session is None:
                            answer = wrap_observation(
                                observation or "", reward=reward, terminated=terminated
                            )
                            episode.messages += [
                                {"role": "user", "content": step.action},
                                {"role": "assistant", "content": answer},
                            ]
                results.append((observation if parsed else None, info))
        return results
