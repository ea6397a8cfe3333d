"""``BatchLoop``: a :class:`~agentworld.sim.generation.TokenEngine` without continuous batching
(the static and beam engines) behind a thread, as an ``EpisodeEngine``.

Requests submitted while a batch runs form the next batch: one ``generate`` call per distinct
set of sampling parameters. The loop keeps each episode's token history so that a request may
give only the tokens after position ``start`` (the engine itself recomputes the whole prompt).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import Future, InvalidStateError

from agentworld.sim.generation import GenerationOutput, TokenEngine
from agentworld.sim.sampling import SamplingParams


class BatchLoop:
    """Drives a :class:`TokenEngine` from a background thread; thread-safe.

    Implements ``EpisodeEngine`` (:mod:`agentworld.sim.generation`). The thread starts on
    demand and exits when no request is left. A request whose ``generate`` call raises ends
    with ``finish_reason == "error"`` (the other groups of its batch are unaffected).

    Args:
        engine: The engine; from now on only this loop's thread may run it.
    """

    def __init__(self, engine: TokenEngine):
        self.engine = engine
        self._lock = threading.RLock()
        self._queue: list[tuple[list[int], SamplingParams, str | None, Future[GenerationOutput]]] = []
        self._episodes: dict[str, list[int]] = {}
        self._in_flight: set[str] = set()
        self._thread: threading.Thread | None = None

    def submit(
        self,
        prompt_ids: Sequence[int],
        params: SamplingParams,
        episode_id: str | None = None,
        *,
        start: int = 0,
    ) -> Future[GenerationOutput]:
        """Queue one request: its prompt is the episode's first ``start`` tokens then
        ``prompt_ids``. A bad request (its episode in flight, ``start`` beyond its history)
        resolves with ``finish_reason == "error"``."""
        future: Future[GenerationOutput] = Future()
        with self._lock:
            history = self._episodes.get(episode_id, []) if episode_id is not None else []
            error = None
            if episode_id is not None and episode_id in self._in_flight:
                error = f"episode {episode_id!r} already has a request in flight"
            elif not 0 <= start <= len(history):
                error = f"start={start} is not within the episode's history of {len(history)} tokens"
            if error is not None:
                future.set_result(GenerationOutput([], "error", error=error))
                return future
            if episode_id is not None:
                self._in_flight.add(episode_id)
                self._episodes.setdefault(episode_id, [])
            self._queue.append(([*history[:start], *prompt_ids], params, episode_id, future))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="batch-engine")
                self._thread.start()
        return future

    def submit_many(
        self,
        prompts: Sequence[Sequence[int]],
        params: Sequence[SamplingParams],
        episode_ids: Sequence[str | None] | None = None,
    ) -> list[Future[GenerationOutput]]:
        """:meth:`submit` ``[batch]`` whole prompts queued together (they share a batch)."""
        episodes = list(episode_ids) if episode_ids is not None else [None] * len(prompts)
        with self._lock:  # the loop thread takes the queue under this lock: all or none
            return [self.submit(p, sp, e) for p, sp, e in zip(prompts, params, episodes, strict=True)]

    def fork(self, parent_id: str, child_id: str) -> Future[None]:
        """Start ``child_id`` with ``parent_id``'s history (an unknown parent: empty)."""
        with self._lock:
            self._episodes[child_id] = list(self._episodes.get(parent_id, []))
        return _done(None)

    def close_episode(self, episode_id: str) -> Future[None]:
        """Forget an episode's history (unknown ids are ignored)."""
        with self._lock:
            self._episodes.pop(episode_id, None)
        return _done(None)

    def _run(self) -> None:
        while True:
            with self._lock:
                batch, self._queue = self._queue, []
                if not batch:
                    self._thread = None
                    return
            groups: dict[SamplingParams, list[int]] = defaultdict(list)
            for k, (_, params, _, _) in enumerate(batch):
                groups[params].append(k)
            for params, rows in groups.items():
                try:
                    outputs = self.engine.generate([batch[k][0] for k in rows], params)
                except Exception as error:  # noqa: BLE001 -- goes to this group's callers
                    outputs = [GenerationOutput([], "error", error=repr(error)) for _ in rows]
                for k, output in zip(rows, outputs, strict=True):
                    prompt, _, episode_id, future = batch[k]
                    if episode_id is not None:
                        with self._lock:
                            self._in_flight.discard(episode_id)
                            if output.finish_reason != "error" and episode_id in self._episodes:
                                self._episodes[episode_id] = prompt + list(output.token_ids)
                    try:
                        future.set_result(output)
                    except InvalidStateError:  # cancelled by its caller
                        pass


def _done(result: None) -> Future[None]:
    future: Future[None] = Future()
    future.set_result(result)
    return future
