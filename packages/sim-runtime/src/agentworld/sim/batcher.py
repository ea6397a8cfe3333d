"""Gathering concurrent asyncio requests into batched calls of a blocking function: the OpenAI
server's requests, and the :class:`~agentworld.sim.simulator.Simulator`'s steps on a world model
without the session API."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


@dataclass(slots=True)
class _Waiting(Generic[In, Out]):
    item: In
    future: asyncio.Future[Out] = field(repr=False)


class Batcher(Generic[In, Out]):
    """Runs ``run(items) -> outputs`` on batches of concurrently submitted items.

    One worker task per event loop: once an item waits, it waits up to
    ``max_wait_s`` for more (or until ``max_batch`` are there), takes them,
    runs ``run`` in a thread (the loop keeps accepting requests) and resolves
    each caller's future. Items submitted while a batch runs form the next one,
    so under load the batches grow by themselves. If ``run`` raises on a batch
    of several items, each item is run again on its own, so that only the
    callers whose own item fails get an exception (one bad request never fails
    the requests batched with it); ``batch_sizes`` records those calls too.

    Args:
        run: Blocking function, ``[batch]`` items in, ``[batch]`` outputs out, same order.
        max_batch: Most items per call.
        max_wait_s: Longest wait for more items before a partial batch runs (seconds).

    Raises:
        ValueError: ``max_batch < 1`` or ``max_wait_s < 0``.
    """

    def __init__(
        self,
        run: Callable[[Sequence[In]], Sequence[Out]],
        *,
        max_batch: int = 64,
        max_wait_s: float = 0.005,
    ):
        if max_batch < 1 or max_wait_s < 0:
            raise ValueError(
                f"need max_batch >= 1 and max_wait_s >= 0, got {max_batch} and {max_wait_s}"
            )
        self.run, self.max_batch, self.max_wait_s = run, max_batch, max_wait_s
        self.batch_sizes: list[int] = []  # size of every call made, in order
        self._waiting: list[_Waiting[In, Out]] = []
        self._more: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None

    async def submit(self, item: In) -> Out:
        """The output for ``item``, computed in a batch with concurrently submitted items."""
        loop = asyncio.get_running_loop()
        waiting = _Waiting(item, loop.create_future())
        self._waiting.append(waiting)
        if self._worker is None or self._worker.done():
            self._more = asyncio.Event()
            self._worker = loop.create_task(self._loop())
        assert self._more is not None
        self._more.set()
        return await waiting.future

    async def _loop(self) -> None:
        assert self._more is not None
        loop = asyncio.get_running_loop()
        while self._waiting:
            deadline = loop.time() + self.max_wait_s
            while len(self._waiting) < self.max_batch and loop.time() < deadline:
                self._more.clear()
                try:  # the rest of a burst of requests
                    await asyncio.wait_for(self._more.wait(), deadline - loop.time())
                except TimeoutError:
                    break
            batch = [w for w in self._waiting[: self.max_batch] if not w.future.done()]
            self._waiting = self._waiting[self.max_batch :]
            if not batch:
                continue
            await self._run_batch(batch)

    async def _run_batch(self, batch: list[_Waiting[In, Out]]) -> None:
        self.batch_sizes.append(len(batch))
        try:
            outputs = await asyncio.to_thread(self.run, [w.item for w in batch])
        except Exception as error:  # noqa: BLE001 -- handed to the callers whose item fails
            if len(batch) == 1:
                if not batch[0].future.done():
                    batch[0].future.set_exception(error)
                return
            for w in batch:  # find the items that fail: each on its own
                if not w.future.done():
                    await self._run_batch([w])
            return
        for w, output in zip(batch, outputs, strict=True):
            if not w.future.done():  # the caller may have gone away
                w.future.set_result(output)
