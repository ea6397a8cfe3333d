"""Seeded task sampler of the classic domains: one environment seed and an instruction per task."""

from __future__ import annotations

import random

from agentworld.core.types import Task
from agentworld.domains.classic.env import start_state
from agentworld.domains.classic.render import decode
from agentworld.domains.classic.variants import Kind, Variant


class ClassicTaskSampler:
    """Deterministic tasks: ``sample(n, seed=s)`` is a pure function of ``(variant, n, s)``.

    Each task has ``setup={"env_seed": k}`` (``k`` in ``[0, 2**31)``), the seed
    the real environment is reset with, so the start state is known (Taxi's
    taxi, passenger and destination; FrozenLake and CliffWalking always start
    at ``S``, the seed then fixes the slippery dynamics). Taxi tasks name the
    passenger's stop and the destination and repeat them in ``check``.

    Args:
        variant: The variant tasks are drawn for.
    """

    def __init__(self, variant: Variant) -> None:
        self.variant = variant

    def sample(self, n: int, *, seed: int) -> list[Task]:
        """``n`` tasks with ids ``{variant}-{seed}-{i:04d}``."""
        rng = random.Random(f"{self.variant.name}-tasks-{seed}")
        tasks = []
        for i in range(n):
            env_seed = rng.randrange(2**31)
            instruction, check = self.variant.instruction, {}
            if self.variant.kind is Kind.TAXI:
                board = decode(self.variant, start_state(self.variant, env_seed))
                check = {"passenger": board.passenger, "destination": board.destination}
                instruction = (
                    f"Pick up the passenger at {board.passenger} "
                    f"and drop them at {board.destination}."
                )
            tasks.append(
                Task(
                    id=f"{self.variant.name}-{seed}-{i:04d}",
                    domain=self.variant.name,
                    instruction=instruction,
                    kind=self.variant.kind.value,
                    setup={"env_seed": env_seed},
                    check=check,
                )
            )
        return tasks
