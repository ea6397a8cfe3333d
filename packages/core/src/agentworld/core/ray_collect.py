"""Collection on a Ray cluster: ``collect(..., executor="ray")``.

Each of ``workers`` Ray actors (one CPU each) holds one real environment of the domain and runs
the episodes the driver hands it one at a time, as a collection thread does
(:func:`agentworld.core.collect.collect`); the driver appends each finished episode to the part
file, so what a run recorded survives anything that happens on the cluster. Episode ``i`` has
the same task, policy and seed as in-process, hence the same content.

A worker that dies mid-episode (killed, out of memory, its node lost) loses only that episode:
it is run again once on a fresh actor and marked ``metadata["retried"] = 1``; a second death
of the same episode stops the collection (:class:`WorkerLostError`), and a rerun resumes from
the part file. Exceptions raised by the environment or the policy are not retried: they stop
the collection as they do in-process.

The domain object and its environment options travel to the workers by pickle (Ray's
cloudpickle), so every node needs agentworld and the domain's package installed.

Needs ``pip install 'agentworld-core[ray]'``. Ray's own documentation covers clusters
(``ray start --head`` on one machine, ``ray start --address HEAD:6379`` on the others).
"""

from __future__ import annotations

import os
import socket
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from agentworld.core.extras import require
from agentworld.core.protocols import Domain
from agentworld.core.ray_local import init_local
from agentworld.core.types import Episode, Task

#: New attempts of an episode whose worker died.
RETRIES = 1


class WorkerLostError(RuntimeError):
    """An episode's Ray worker died more than :data:`RETRIES` + 1 times."""


def connect(address: str | None, feature: str = 'collect(executor="ray")') -> tuple[Any, bool]:
    """``(ray module, whether this call started Ray)``: the running Ray session if there is one,
    else ``ray.init(address)`` (``None``: the one ``$RAY_ADDRESS`` names, else a new local
    cluster on loopback with private files, :func:`agentworld.core.ray_local.init_local`;
    ``"auto"``: the cluster running on this machine; ``"HOST:PORT"`` or ``"ray://HOST:PORT"``).
    ``feature`` names what needs Ray in the missing-extra error.

    Raises:
        ModuleNotFoundError: Ray is not installed (names the extra).
        ConnectionError: no cluster answers at ``address`` (one line, naming it and the fix).
    """
    ray = require("ray", "ray", feature)
    if ray.is_initialized():
        return ray, False
    hint = "start one with `ray start --head`, or give no address for a local cluster"
    if address and address != "auto":
        host, _, port = address.removeprefix("ray://").rpartition(":")
        try:
            socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
        except (OSError, ValueError) as e:
            raise ConnectionError(
                f"no Ray cluster at {address!r} ({e.__class__.__name__}: {e}); {hint}"
            ) from None
    try:
        if address is None and not os.environ.get("RAY_ADDRESS"):  # loopback, private files
            init_local(ray, log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, include_dashboard=False,
                     configure_logging=False)
    except ConnectionError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConnectionError(f"no Ray cluster at {address!r} ({first}); {hint}") from None
    return ray, True


class EpisodeWorker:
    """A Ray actor's state: one environment of ``domain`` (made on first use, with
    ``env_options``) that runs episodes one after another, at most ``max_steps`` steps each."""

    def __init__(self, domain: Domain, env_options: dict[str, Any], max_steps: int) -> None:
        self.domain, self.env_options, self.max_steps = domain, env_options, max_steps
        self.env: Any = None

    def run(self, task: Task, policy: str, seed: int) -> Episode:
        """Episode ``seed`` by the domain's policy named ``policy``, ``task`` being the
        sampler's (a policy that brings its own tasks plays its own): what a collection thread
        runs (:func:`agentworld.core.episode_runner.collect_episode`)."""
        from agentworld.core.domain_contract import checked_env
        from agentworld.core.episode_runner import collect_episode

        if self.env is None:
            self.env = checked_env(self.domain, self.domain.make_env(**self.env_options))
        return collect_episode(self.domain, self.env, policy, task, seed=seed,
                               max_steps=self.max_steps)

    def close(self) -> None:
        """Close the environment (a sandbox, a server process)."""
        if self.env is not None:
            self.env.close()
            self.env = None


def collect_on_ray(
    domain: Domain,
    todo: Sequence[int],
    tasks: Sequence[Task],
    policies: Sequence[str],
    *,
    seed: int,
    max_steps: int,
    workers: int,
    finished: Callable[[int, Episode], None],
    env_options: dict[str, Any] | None = None,
    address: str | None = None,
) -> None:
    """Run episodes ``todo`` (indices into ``tasks`` and ``policies``; episode ``i`` has seed
    ``seed + i``) on ``workers`` Ray actors (at most the cluster's CPUs, one each); ``finished(i, episode)`` is called in this thread
    as each one ends, in completion order. A Ray session this call started is shut down at the
    end; one already running is kept.

    Raises:
        ConnectionError: the cluster at ``address`` cannot be reached (:func:`connect`).
        WorkerLostError: one episode's worker died twice (the episodes passed to ``finished``
            are kept).
        Exception: what the environment or policy raised, as in-process.
    """
    if not todo:
        return
    ray, started = connect(address)
    remote = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(EpisodeWorker)
    actors: list[Any] = []

    def start() -> Any:
        actors.append(remote.remote(domain, dict(env_options or {}), max_steps))
        return actors[-1]

    try:
        # One CPU per actor: more actors than the cluster's CPUs would wait forever for theirs.
        cpus = int(ray.cluster_resources().get("CPU", 1))
        idle = [start() for _ in range(max(1, min(workers, len(todo), cpus)))]
        queue = deque((i, 0) for i in todo)
        pending: dict[Any, tuple[int, int, Any]] = {}
        while queue or pending:
            while idle and queue:
                i, retries = queue.popleft()
                actor = idle.pop()
                pending[actor.run.remote(tasks[i], policies[i], seed + i)] = (i, retries, actor)
            [ref], _ = ray.wait(list(pending), num_returns=1)
            i, retries, actor = pending.pop(ref)
            try:
                episode = ray.get(ref)
            except ray.exceptions.RayActorError as e:
                if retries >= RETRIES:
                    raise WorkerLostError(
                        f"episode {i}: its Ray worker died {retries + 1} times "
                        f"({str(e).strip().splitlines()[0]}); rerun to resume from the part file"
                    ) from None
                queue.appendleft((i, retries + 1))
                idle.append(start())
                continue
            if retries:
                episode.metadata["retried"] = retries
            finished(i, episode)
            idle.append(actor)
        ray.get([actor.close.remote() for actor in idle])
    finally:
        for actor in actors:
            ray.kill(actor)
        if started:
            ray.shutdown()
