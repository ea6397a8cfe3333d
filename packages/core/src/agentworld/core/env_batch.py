"""Environments of this process as an :class:`~agentworld.core.protocols.EnvironmentBatch`.

:func:`agentworld.core.rollout.rollout` plays a list of environments through
:class:`LocalEnvironments` (reset and stepped in threads) and a batch that lives elsewhere
(:class:`agentworld.core.ray_envs.RayEnvironments`, on Ray actors) through the same loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

Record = Callable[[Any, Any], Any]


class LocalEnvironments:
    """``envs`` (Gymnasium ``Env`` API) reset and stepped in ``workers`` threads (1: the
    caller's thread); ``record(env, observation) -> kept observation`` is applied to what
    ``reset`` and ``step`` return (e.g. adding the environment's privileged state).

    The thread pool starts on first use; :meth:`shutdown` stops it, :meth:`close` also closes
    the environments.
    """

    def __init__(self, envs: Sequence[Any], workers: int = 1, record: Record | None = None):
        self.envs, self.workers, self.record = list(envs), workers, record
        self._pool: ThreadPoolExecutor | None = None

    def __len__(self) -> int:
        return len(self.envs)

    def reset_batch(
        self,
        indices: Sequence[int],
        seeds: Sequence[int | None],
        options: Sequence[dict[str, Any] | None],
    ) -> list[tuple[Any, dict[str, Any]]]:
        """``[len(indices)]`` ``(observation, info)`` of ``env.reset(seed=, options=)``."""

        def reset(k: int) -> tuple[Any, dict[str, Any]]:
            env = self.envs[indices[k]]
            observation, info = env.reset(seed=seeds[k], options=options[k])
            return self._kept(env, observation), info

        return self._map(reset, range(len(indices)))

    def step_batch(
        self, indices: Sequence[int], actions: Sequence[Any]
    ) -> list[tuple[Any, float, bool, bool, dict[str, Any]]]:
        """``[len(indices)]`` results of ``env.step(action)`` (the action sent unchanged)."""

        def step(k: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
            env = self.envs[indices[k]]
            observation, reward, terminated, truncated, info = env.step(actions[k])
            return self._kept(env, observation), reward, terminated, truncated, info

        return self._map(step, range(len(indices)))

    def shutdown(self) -> None:
        """Stop the thread pool (the environments stay open)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def close(self) -> None:
        """Stop the thread pool and close every environment."""
        self.shutdown()
        for env in self.envs:
            env.close()

    def _kept(self, env: Any, observation: Any) -> Any:
        return observation if self.record is None else self.record(env, observation)

    def _map(self, fn: Callable[[int], Any], items: Iterable[int]) -> list[Any]:
        items = list(items)
        if self.workers <= 1 or len(items) <= 1:
            return [fn(k) for k in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=min(self.workers, len(self.envs)))
        return list(self._pool.map(fn, items))
