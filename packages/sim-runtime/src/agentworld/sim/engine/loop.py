"""``EngineLoop``: a :class:`PagedEngine` driven by a background thread.

Callers in many threads (or asyncio tasks, through ``asyncio.wrap_future``) submit
requests at any time; each joins the batch that is running at the next scheduler
iteration: continuous batching across callers. Everything that touches the
engine runs on the loop's thread, between iterations.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from collections.abc import Sequence as Seq
from concurrent.futures import Future, InvalidStateError
from typing import Any

from agentworld.sim.engine.paged import PagedEngine
from agentworld.sim.engine.stats import EngineStats
from agentworld.sim.generation import GenerationOutput
from agentworld.sim.sampling import SamplingParams

logger = logging.getLogger(__name__)


class EngineLoop:
    """Drives a :class:`PagedEngine` from a background thread; thread-safe.

    :meth:`submit` returns a ``concurrent.futures.Future`` at once; the request joins the
    batch already running at the next iteration. The thread starts on demand and exits
    when no request is left; it is not a daemon, so the process exits after it. Implements
    the ``TokenEngine`` protocol through :meth:`generate` and the ``EpisodeEngine`` protocol
    (:mod:`agentworld.sim.generation`) through :meth:`submit`, :meth:`fork` and
    :meth:`close_episode`.

    Args:
        engine: The engine; from now on only this loop's thread may touch it.
    """

    def __init__(self, engine: PagedEngine):
        self.engine = engine
        self._lock = threading.Lock()
        self._inbox: list[tuple[Callable[[], Any], Future[Any]]] = []
        self._futures: dict[str, Future[GenerationOutput]] = {}
        self._thread: threading.Thread | None = None

    def submit(
        self,
        prompt_ids: Seq[int],
        params: SamplingParams,
        episode_id: str | None = None,
        *,
        start: int = 0,
    ) -> Future[GenerationOutput]:
        """Queue one request (:meth:`PagedEngine.add_request`: ``prompt_ids`` continue the
        episode's history at position ``start``); the future resolves to its
        :class:`GenerationOutput` (a bad request resolves with ``finish_reason == "error"``)."""
        result: Future[GenerationOutput] = Future()

        def add() -> None:
            request_id = self.engine.add_request(
                prompt_ids, params, episode_id=episode_id, start=start
            )
            self._futures[request_id] = result

        self._post(add, result, resolve=False)
        return result

    def submit_many(
        self,
        prompts: Seq[Seq[int]],
        params: Seq[SamplingParams],
        episode_ids: Seq[str | None] | None = None,
    ) -> list[Future[GenerationOutput]]:
        """:meth:`submit` ``[batch]`` requests added together (between the same two
        iterations)."""
        episodes = list(episode_ids) if episode_ids is not None else [None] * len(prompts)
        futures: list[Future[GenerationOutput]] = [Future() for _ in prompts]
        items = list(zip(prompts, params, episodes, futures, strict=True))

        def add() -> None:
            for prompt_ids, sampling, episode_id, future in items:
                request_id = self.engine.add_request(prompt_ids, sampling, episode_id=episode_id)
                self._futures[request_id] = future

        self._post(add, Future(), resolve=False)
        return futures

    def close_episode(self, episode_id: str) -> Future[None]:
        """Run :meth:`PagedEngine.close` between iterations (a ``KeyError`` goes to the
        future)."""
        return self._post(lambda: self.engine.close(episode_id))

    def fork(self, parent_id: str, child_id: str) -> Future[None]:
        """Run :meth:`PagedEngine.fork` between iterations; requests submitted after it see
        the child."""
        return self._post(lambda: self.engine.fork(parent_id, child_id))

    def stats(self) -> EngineStats:
        """The engine's counters (:class:`EngineStats`), read between iterations; blocks
        until the loop thread has read them."""
        return self._post(lambda: self.engine.stats).result()

    def reset_prefix_cache(self, salt: str) -> None:
        """:meth:`PagedEngine.reset_prefix_cache` between iterations (new model version
        ``salt``, e.g. after a weight update); blocks until done.

        Raises:
            RuntimeError: A request is in flight.
        """
        self._post(lambda: self.engine.reset_prefix_cache(salt)).result()

    def generate(
        self,
        prompts: Seq[Seq[int]],
        params: SamplingParams | Seq[SamplingParams],
        *,
        episode_ids: Seq[str | None] | None = None,
    ) -> list[GenerationOutput]:
        """Submit ``[batch]`` prompts and wait for their outputs (input order)."""
        n = len(prompts)
        params_list = [params] * n if isinstance(params, SamplingParams) else list(params)
        return [f.result() for f in self.submit_many(prompts, params_list, episode_ids)]

    def _post(
        self, fn: Callable[[], Any], future: Future[Any] | None = None, *, resolve: bool = True
    ) -> Future[Any]:
        future = future if future is not None else Future()
        with self._lock:
            self._inbox.append((fn if not resolve else self._resolving(fn, future), future))
            if self._thread is None:
                # Not a daemon: the interpreter joins it at exit. A daemon thread still
                # freeing tensors at shutdown is killed inside torch's C++ deallocator,
                # which aborts the process ("terminate called without an active exception").
                self._thread = threading.Thread(target=self._run, name="paged-engine", daemon=False)
                self._thread.start()
        return future

    @staticmethod
    def _resolving(fn: Callable[[], Any], future: Future[Any]) -> Callable[[], None]:
        def run() -> None:
            _set(future, result=fn())

        return run

    def _run(self) -> None:
        while True:
            with self._lock:
                commands, self._inbox = self._inbox, []
                if not commands and not self.engine.has_unfinished():
                    self._thread = None
                    return
            for command, future in commands:
                try:
                    command()
                except Exception as error:  # noqa: BLE001 -- goes to the caller's future
                    _set(future, error=error)
            try:
                outputs = self.engine.step()
            except Exception as error:  # noqa: BLE001 -- the batch fails, the loop lives on
                logger.exception("engine step failed; failing the requests in flight")
                outputs = self.engine.abort_all(f"engine step failed: {error!r}")
            for output in outputs:
                future = self._futures.pop(output.request_id or "", None)
                if future is not None:
                    _set(future, result=output)


def _set(future: Future[Any], *, result: Any = None, error: BaseException | None = None) -> None:
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except InvalidStateError:  # cancelled by its caller
        pass
