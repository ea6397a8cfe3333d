"""Which task a reset gets: chosen on the server, never defined by the client.

A task carries the success check the server runs after every step (for the terminal:
paths, expected contents, an ``output_regex``), so a task sent by a client would be code
that client runs on the server (a pattern such as ``^(a+)+$`` holds the interpreter for
minutes, since Python's ``re`` keeps the GIL). A reset therefore names a task only by
``seed`` (the domain's own sampler makes it: ``domain.tasks().sample(1, seed=seed)[0]``)
or by ``task_id`` from a fixed list the server made at start-up
(``sample(num_listed, seed=list_seed)``).
"""

from __future__ import annotations

import random
from typing import Any

from agentworld.core.types import Task

MAX_SEED = 2**63 - 1


class TaskPool:
    """The tasks a server hands out, all made by the domain's task sampler.

    Args:
        sampler: The domain's sampler (``domain.tasks()``): ``sample(n, *, seed) -> [Task]``.
        num_listed: Tasks offered by id (``task_id`` in a reset); ``0``: none.
        list_seed: Sampler seed of the listed tasks.

    Raises:
        ValueError: ``num_listed < 0``.
    """

    def __init__(self, sampler: Any, *, num_listed: int = 0, list_seed: int = 0):
        if num_listed < 0:
            raise ValueError(f"num_listed must be >= 0, got {num_listed}")
        self.sampler = sampler
        listed = sampler.sample(num_listed, seed=list_seed) if num_listed else []
        self.listed: dict[str, Task] = {task.id: task for task in listed}

    def pick(self, seed: int | None = None, task_id: str | None = None) -> Task:
        """The task for a reset: ``task_id`` from the list, else the sampler's task for
        ``seed``, else for a fresh random seed.

        Raises:
            ValueError: ``task_id`` is not listed, or both ``seed`` and ``task_id`` are given.
        """
        if task_id is not None:
            if seed is not None:
                raise ValueError("give seed or task_id, not both")
            task = self.listed.get(task_id)
            if task is None:
                some = ", ".join(list(self.listed)[:3])
                valid = f"{len(self.listed)} listed, e.g. {some}" if some else "none listed"
                raise ValueError(f"unknown task_id {task_id!r} ({valid}; see GET /tasks)")
            return task
        if seed is None:
            seed = random.SystemRandom().randrange(2**31)
        return self.sampler.sample(1, seed=seed)[0]

    def describe(self) -> list[dict[str, str]]:
        """``[{"id", "kind", "instruction"}]`` of the listed tasks (their checks stay here)."""
        return [
            {"id": t.id, "kind": t.kind, "instruction": t.instruction} for t in self.listed.values()
        ]
