"""Collecting real episodes: run collection policies in a domain's real environment."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentworld.core.domain_base import domain_hooks
from agentworld.core.domain_contract import checked_env
from agentworld.core.env_checks import sample_tasks
from agentworld.core.episode_runner import (
    collect_episode,
    episode_task,
    recorded,
    run_episode,
    visible_action,
    world_model_contract,
)
from agentworld.core.options import parse_env_options
from agentworld.core.partfile import PartFile
from agentworld.core.protocols import Domain
from agentworld.core.types import Episode

#: Running one episode lives in :mod:`agentworld.core.episode_runner` (a Ray worker runs it
#: too); its names are importable from here as well.
__all__ = [
    "EXECUTORS", "assign_policies", "check_policies", "collect", "collect_episode",
    "episode_task", "recorded", "run_episode", "split", "visible_action", "world_model_contract",
]


#: Where :func:`collect` runs environments.
EXECUTORS = ("threads", "ray")


def assign_policies(n: int, mix: dict[str, float], seed: int) -> list[str]:
    """Policy name for each of ``n`` episodes, in proportion to ``mix`` weights, shuffled by ``seed``.

    Raises:
        ValueError: ``mix`` is empty or has a negative or all-zero weight.
    """
    if not mix or any(w < 0 for w in mix.values()) or sum(mix.values()) <= 0:
        raise ValueError(f"policy mix needs non-negative weights with a positive sum, got {mix}")
    total = sum(mix.values())
    names: list[str] = []
    for name, weight in mix.items():
        names += [name] * round(n * weight / total)
    names = (names + [max(mix, key=mix.get)] * n)[:n]
    random.Random(seed).shuffle(names)
    return names


def check_policies(domain: Domain, policies: Iterable[str]) -> None:
    """Check that ``domain`` offers every policy named in ``policies`` here.

    Raises:
        ValueError: naming the missing policies and the valid ones.
    """
    available = domain.policies()
    if not available:
        raise ValueError(
            f"domain {domain.name!r} offers no policies here (its policies() returned none), "
            "so nothing can act in its environment; a domain plugin returns its policies "
            "from policies() (docs/plugins.md)"
        )
    unknown = [p for p in policies if p not in available]
    if unknown:
        raise ValueError(
            f"domain {domain.name!r} has no policy {unknown} here; valid: {sorted(available)} "
            "(`agentworld domains` tells what its policies need)"
        )


def collect(
    domain: Domain,
    n: int,
    *,
    policies: dict[str, float],
    seed: int = 0,
    max_steps: int = 12,
    workers: int = 2,
    progress: Callable[[int], None] | None = None,
    part: str | None = None,
    env_options: dict[str, Any] | None = None,
    executor: str = "threads",
    address: str | None = None,
) -> list[Episode]:
    """Collect ``n`` real episodes, ``workers`` environments in parallel (threads, or Ray
    actors with ``executor="ray"``).

    Episode ``i`` uses task ``i`` of ``domain.tasks().sample(n, seed=seed)`` (or, for a
    policy that brings its own tasks, :class:`~agentworld.core.protocols.TaskingPolicy`, its
    ``task(seed + i)``), the policy assigned by :func:`assign_policies` and seed ``seed + i``,
    so the result does not depend on ``workers``, nor on being resumed.

    Args:
        progress: called with 1 after each finished episode (and, when resuming, once
            with the number read back from ``part``).
        part: A local path where each finished episode is appended at once
            (:class:`~agentworld.core.partfile.PartFile`): a rerun with the same settings
            after a crash or kill collects only the episodes missing there. The file is
            left in place; remove it once the data set is written. A run that fails before
            any episode is in it removes it.
        env_options: Options of ``domain.make_env`` (``agentworld collect --set``; the mcp
            domain's ``server="CMD ARGS"``), parsed by the domain's options class
            (:func:`agentworld.core.options.parse_env_options`: strings are coerced) before
            ``part`` is touched.
        executor: ``"threads"`` (this process) or ``"ray"``: ``workers`` Ray actors, one
            environment each (:mod:`agentworld.core.ray_collect`; the same episodes, and an
            episode whose worker died is run again once, marked ``metadata["retried"]``).
        address: The Ray cluster (``"auto"``, ``"HOST:PORT"``; ``None``: the running Ray
            session, else a new local cluster); only with ``executor="ray"``.

    Returns:
        ``n`` episodes in task order.

    Raises:
        ValueError: a policy name in ``policies`` is not provided by the domain, or an
            unknown ``executor``.
        agentworld.core.options.OptionsError: (a ``ValueError``) an environment option the
            domain does not declare, or a value of the wrong type.
        ConnectionError: ``executor="ray"`` and no Ray cluster answers at ``address``.
        agentworld.core.ray_collect.WorkerLostError: one episode's Ray worker died twice.
        agentworld.core.partfile.PartFileError: ``part`` holds another collection's
            episodes or a damaged line.
        OSError: ``part`` cannot be written (raised before any episode runs).
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}; got {executor!r}")
    env_options = parse_env_options(domain, env_options)
    domain = domain_hooks(domain).for_environment(env_options) or domain
    check_policies(domain, policies)
    names = assign_policies(n, policies, seed)
    store, done = None, {}
    if part is not None:
        settings = {"domain": domain.name, "env_version": domain.version, "episodes": n,
                    "seed": seed, "policies": policies, "max_steps": max_steps,
                    **({"env_options": env_options} if env_options else {})}
        store = PartFile(part, settings)
        done = {i: e for i, e in store.open().items() if 0 <= i < n}
    try:
        if progress and done:
            progress(len(done))
        tasks = sample_tasks(domain, n, seed)  # checked: n Task objects

        def work(indices: list[int]) -> list[tuple[int, Episode]]:
            if not indices:
                return []
            env = checked_env(domain, domain.make_env(**(env_options or {})))
            out = []
            try:
                for i in indices:
                    episode = collect_episode(
                        domain, env, names[i], tasks[i], seed=seed + i, max_steps=max_steps
                    )
                    if store is not None:
                        store.append(i, episode)
                    out.append((i, episode))
                    if progress:
                        progress(1)
            finally:
                env.close()
            return out

        todo = [i for i in range(n) if i not in done]
        if executor == "ray":
            from agentworld.core.ray_collect import collect_on_ray

            results: dict[int, Episode] = {}

            def finished(i: int, episode: Episode) -> None:
                if store is not None:
                    store.append(i, episode)
                results[i] = episode
                if progress:
                    progress(1)

            collect_on_ray(domain, todo, tasks, names, seed=seed, max_steps=max_steps,
                           workers=workers, finished=finished, env_options=env_options,
                           address=address)
        else:
            shards = [todo[w::workers] for w in range(workers)]
            with ThreadPoolExecutor(max_workers=workers) as pool:
                results = dict(pair for shard in pool.map(work, shards) for pair in shard)
    except BaseException:
        if store is not None and not done and store.appended == 0:
            store.remove()  # nothing to resume: leave no file to block another command
        raise
    finally:
        if store is not None:
            store.close()
    results |= done
    return [results[i] for i in range(n)]


def split(
    episodes: list[Episode], heldout_fraction: float, seed: int
) -> tuple[list[Episode], list[Episode]]:
    """Split by episode (never by transition) into (train, held-out), shuffled by ``seed``."""
    order = list(range(len(episodes)))
    random.Random(seed).shuffle(order)
    k = max(1, round(len(episodes) * heldout_fraction))
    held = set(order[:k])
    return (
        [e for i, e in enumerate(episodes) if i not in held],
        [e for i, e in enumerate(episodes) if i in held],
    )
