"""Many simulated episodes on one world model, with their steps batched together.

Each episode keeps its chat history: the system message (domain prompt, task
and initial observation, exactly as :func:`agentworld.core.formats.system_message`
renders them for training), then per step the user's action and the
assistant's ``<predicted_observation>`` block. Concurrent :meth:`Simulator.step`
calls from many coroutines are gathered into one ``predict`` call.

World models may offer more: ``predict`` taking ``episode_ids`` (the ``hf`` paged engine
then keeps each episode's KV pinned between steps; vLLM uses them as request ids), the
:class:`~agentworld.core.protocols.EpisodicWorldModel` capability (``close_episode(id)`` and
``fork_episode(parent, child)`` release or share that state), ``concurrent_predict``
(True when overlapping ``predict`` calls join one running batch: batches are then not
awaited one after the other), and :class:`FailedPrediction` for a request that failed
alone.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentworld.core.formats import (
    Transition,
    parse_transition,
    system_message,
    window_messages,
    wrap_observation,
)
from agentworld.core.protocols import EpisodicWorldModel, WorldModel
from agentworld.core.types import Episode, Observation, Prediction, Task

Message = dict[str, str]
StepResult = tuple[str | None, dict[str, Any]]


class FailedPrediction(Prediction):
    """A request that failed alone (e.g. it needs more KV cache than the engine has):
    ``observation`` is ``None`` and ``error`` says why. Other requests of its batch are
    unaffected."""

    error: str


def _accepts(function: Any, name: str) -> bool:
    """True when ``function`` takes keyword ``name`` (or any keyword)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in parameters)


@dataclass(slots=True)
class _Episode:
    messages: list[Message]
    turns: int = 0
    busy: bool = False


@dataclass(slots=True)
class _Pending:
    episode_id: str
    action: str
    future: asyncio.Future[StepResult] = field(repr=False)


def _resolve(
    future: asyncio.Future[StepResult],
    result: StepResult | None = None,
    error: BaseException | None = None,
) -> None:
    if future.done():  # cancelled by the caller while its step ran
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)  # type: ignore[arg-type]


class Simulator:
    """Episodes stepped by a shared :class:`WorldModel`.

    A step whose answer has no observation block returns ``(None, info)`` with
    ``info["parsed"] = False`` and leaves the history unchanged, so the step can
    be retried (useful with sampling). ``info`` holds ``raw`` (the answer text),
    ``parsed``, ``num_tokens`` (generated tokens) and ``turn`` (0-based step index).
    A step whose request failed alone (a :class:`FailedPrediction`) raises
    ``RuntimeError`` from :meth:`step` (``step_many`` returns ``(None, info)`` with
    ``info["error"]``); the history is unchanged and other episodes go on.
    A step cancelled while waiting is dropped; one cancelled while its batch
    runs is still recorded in the history.

    Episode ids are passed to ``predict`` when the world model takes ``episode_ids``;
    :meth:`close` and :meth:`fork` then call its ``close_episode`` / ``fork_episode``.

    With ``rewards`` an answer must also carry the reward footer
    (:func:`agentworld.core.formats.parse_transition`); ``info`` then has ``reward``
    (float) and ``terminated`` (bool), and an answer without a valid footer is unparsed
    like one without a block. With ``history_window`` each request shows the model only
    the last ``history_window`` turns (the episode's full history is still kept).

    Args:
        world_model: Anything with ``predict(requests, *, max_new_tokens)``.
        max_batch: Most steps per ``predict`` call.
        max_wait_s: How long the batching loop waits for more steps (seconds).
        max_new_tokens: Generation limit passed to ``predict`` (``None``: model default).
        rewards: Answers carry the reward footer (``None``: the world model's ``rewards``
            attribute, e.g. from its checkpoint card, else ``False``).
        history_window: Turns of history per request (``None``: the world model's
            ``history_window`` attribute, else the whole history).
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
        if rewards is None:
            rewards = bool(getattr(world_model, "rewards", False))
        if history_window is None:
            history_window = getattr(world_model, "history_window", None)
        if history_window is not None and history_window < 0:
            raise ValueError(f"history_window must be >= 0 turns, got {history_window}")
        self.rewards, self.history_window = rewards, history_window
        self.world_model = world_model
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.max_new_tokens = max_new_tokens
        self._episodes: dict[str, _Episode] = {}
        self._lock = threading.Lock()
        self._pending: list[_Pending] = []
        self._full: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None
        self._batches: set[asyncio.Task[None]] = set()
        self._with_ids = _accepts(world_model.predict, "episode_ids")
        self._concurrent = bool(getattr(world_model, "concurrent_predict", False))

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
        with self._lock:
            self._episodes[episode.id] = _Episode(
                [{"role": "system", "content": system_message(episode)}]
            )
        return episode.id

    def fork_sync(self, episode_id: str) -> str:
        """A new episode with a copy of ``episode_id``'s history (and, through the world
        model's ``fork_episode``, of its KV cache). Raises ``KeyError`` if unknown."""
        with self._lock:
            source = self._get(episode_id)
            new_id = uuid.uuid4().hex
            self._episodes[new_id] = _Episode(list(source.messages), source.turns)
        if isinstance(self.world_model, EpisodicWorldModel):
            self.world_model.fork_episode(episode_id, new_id)
        return new_id

    def close_sync(self, episode_id: str) -> None:
        """Forget an episode and release its state in the world model (``close_episode``);
        a step in flight still returns. Unknown ids are ignored."""
        with self._lock:
            known = self._episodes.pop(episode_id, None) is not None
        if known and isinstance(self.world_model, EpisodicWorldModel):
            self.world_model.close_episode(episode_id)

    def messages(self, episode_id: str) -> list[Message]:
        """A copy of the episode's chat history. Raises ``KeyError`` if unknown."""
        with self._lock:
            return [dict(m) for m in self._get(episode_id).messages]

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

    def step_many(self, pairs: Sequence[tuple[str, str]]) -> list[StepResult]:
        """Step ``[batch]`` ``(episode_id, action_text)`` pairs with one ``predict`` call.

        A pair whose request failed alone returns ``(None, info)`` with ``info["error"]``.

        Raises:
            KeyError: An episode id is unknown.
            RuntimeError: An episode appears twice or already has a step in flight.
        """
        self._reserve([episode_id for episode_id, _ in pairs])
        return self._predict(pairs)

    async def step(self, episode_id: str, action_text: str) -> StepResult:
        """``(observation or None, info)`` after ``action_text``; batched with concurrent calls.

        Raises:
            KeyError: ``episode_id`` is unknown or closed before its step ran.
            RuntimeError: The episode already has a step in flight, or its request failed
                alone (the message says why; other episodes are unaffected).
        """
        self._reserve([episode_id])
        loop = asyncio.get_running_loop()
        pending = _Pending(episode_id, action_text, loop.create_future())
        self._pending.append(pending)
        if self._full is None or self._worker is None or self._worker.done():
            self._full = asyncio.Event()
            self._worker = loop.create_task(self._run())
        if len(self._pending) >= self.max_batch:
            self._full.set()
        return await pending.future

    async def _run(self) -> None:
        """Batching loop: gather pending steps, predict in a thread, resolve the futures.

        With a ``concurrent_predict`` world model a batch is not awaited before the next is
        gathered, so steps arriving meanwhile join the engine's running batch."""
        assert self._full is not None
        while self._pending:
            if len(self._pending) < self.max_batch:
                self._full.clear()
                try:
                    await asyncio.wait_for(self._full.wait(), self.max_wait_s)
                except TimeoutError:
                    pass
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
            with self._lock:  # drop steps cancelled by their caller or whose episode was closed
                for p in batch:
                    if p.future.cancelled() and p.episode_id in self._episodes:
                        self._episodes[p.episode_id].busy = False
                    elif p.episode_id not in self._episodes:
                        _resolve(p.future, error=KeyError(f"episode {p.episode_id!r} was closed"))
                batch = [p for p in batch if not p.future.done()]
            if not batch:
                continue
            if self._concurrent:
                task = asyncio.get_running_loop().create_task(self._run_batch(batch))
                self._batches.add(task)  # keep a reference until it is done
                task.add_done_callback(self._batches.discard)
            else:
                await self._run_batch(batch)

    async def _run_batch(self, batch: list[_Pending]) -> None:
        pairs = [(p.episode_id, p.action) for p in batch]
        try:
            results = await asyncio.to_thread(self._predict, pairs)
        except Exception as error:  # noqa: BLE001 -- predict failed: so does every step
            for p in batch:
                _resolve(p.future, error=error)
            return
        for p, (observation, info) in zip(batch, results):
            if "error" in info:
                message = f"step of episode {p.episode_id!r} failed: {info['error']}"
                _resolve(p.future, error=RuntimeError(message))
            else:
                _resolve(p.future, (observation, info))

    # -- history bookkeeping ----------------------------------------------------------------

    def _get(self, episode_id: str) -> _Episode:
        try:
            return self._episodes[episode_id]
        except KeyError:
            raise KeyError(f"unknown episode {episode_id!r} (closed or never opened)") from None

    def _reserve(self, ids: Sequence[str]) -> None:
        with self._lock:
            episodes = [self._get(i) for i in ids]
            if len(set(ids)) != len(ids) or any(e.busy for e in episodes):
                raise RuntimeError("an episode may have only one step in flight")
            for episode in episodes:
                episode.busy = True

    def _predict(self, pairs: Sequence[tuple[str, str]]) -> list[StepResult]:
        """Predict for reserved episodes and commit the results (releasing them)."""
        try:
            with self._lock:
                requests = [
                    window_messages(
                        [*self._get(episode_id).messages, {"role": "user", "content": action}],
                        self.history_window,
                    )
                    for episode_id, action in pairs
                ]
            if self._with_ids:
                predictions = self.world_model.predict(
                    requests,
                    max_new_tokens=self.max_new_tokens,
                    episode_ids=[episode_id for episode_id, _ in pairs],
                )
            else:
                predictions = self.world_model.predict(requests, max_new_tokens=self.max_new_tokens)
        except BaseException:
            with self._lock:
                for episode_id, _ in pairs:
                    if episode_id in self._episodes:
                        self._episodes[episode_id].busy = False
            raise
        return self._commit(pairs, predictions)

    def _parse(self, prediction: Prediction) -> Transition | None:
        if prediction.observation is None:
            return None
        if not self.rewards:
            return Transition(prediction.observation)
        return parse_transition(prediction.text, rewards=True)

    def _commit(
        self, pairs: Sequence[tuple[str, str]], predictions: Sequence[Prediction]
    ) -> list[StepResult]:
        results: list[StepResult] = []
        with self._lock:
            for (episode_id, action), prediction in zip(pairs, predictions, strict=True):
                episode = self._episodes.get(episode_id)
                turn = episode.turns if episode is not None else -1
                parsed = self._parse(prediction)
                info: dict[str, Any] = {
                    "raw": prediction.text,
                    "parsed": parsed is not None,
                    "num_tokens": prediction.num_tokens,
                    "turn": turn,
                }
                if isinstance(prediction, FailedPrediction):
                    info["error"] = prediction.error
                if parsed is not None and self.rewards:
                    info["reward"], info["terminated"] = parsed.reward, parsed.terminated
                if episode is not None:
                    episode.busy = False
                    if parsed is not None:
                        episode.messages.append({"role": "user", "content": action})
                        answer = wrap_observation(
                            parsed.observation, reward=parsed.reward, terminated=parsed.terminated
                        )
                        episode.messages.append({"role": "assistant", "content": answer})
                        episode.turns += 1
                results.append((parsed.observation if parsed else None, info))
        return results
