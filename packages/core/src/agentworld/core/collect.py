"""Collecting real episodes: run collection policies in a domain's real environment."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentworld.core.escapes import visible, visible_strings
from agentworld.core.options import parse_env_options
from agentworld.core.partfile import PartFile
from agentworld.core.domain_base import domain_hooks
from agentworld.core.domain_contract import checked_env
from agentworld.core.protocols import (
    Domain,
    PrivilegedEnvironment,
    PromptingEnvironment,
    ResettablePolicy,
    TaskingPolicy,
)
from agentworld.core.rollout import each, rollout, text_of
from agentworld.core.tool_coverage import episode_coverage
from agentworld.core.types import Action, Episode, Observation, ObservationText, Step, Task


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


def recorded(env: Any, observation: Any) -> Observation:
    """The observation to record: ``observation`` (an :class:`Observation`, or the text a
    Gymnasium-style env returns, e.g. :class:`~agentworld.core.types.ObservationText`) with
    the env's privileged state (``env.privileged_state()`` when it has one and it is not
    ``None``: the state the agent is not shown, such as a file-tree snapshot), else its own.

    Text that cannot be UTF-8 encoded (a file name with undecodable bytes, which Python holds
    as lone surrogates) is recorded as visible escapes (:func:`agentworld.core.escapes.visible`:
    byte ``0xff`` as ``\\xff``), in the text and in every key and value of the state, so the
    episode can be written and every later use of it sees the same names."""
    state = env.privileged_state() if isinstance(env, PrivilegedEnvironment) else None
    if state is None and isinstance(observation, (Observation, ObservationText)):
        state = observation.state
    text = text_of(observation)
    return Observation(text=visible(str(text)), state=visible_strings(state))


def visible_action(action: Any) -> Any:
    """An :class:`Action` whose text and arguments hold lone surrogates (e.g. a model's JSON
    answer with ``"\\udcff"``) with them as visible escapes
    (:func:`agentworld.core.escapes.visible_strings`); other values (``None``: stop) unchanged."""
    if not isinstance(action, Action):
        return action
    return Action.model_validate(visible_strings(action.model_dump()))


def run_episode(
    domain: Domain, env: Any, task: Task | None, policy: Any, *, seed: int, max_steps: int
) -> Episode:
    """Roll out ``policy`` in a real ``env`` for at most ``max_steps`` steps and return the episode
    (:func:`agentworld.core.rollout.rollout` on one environment; the policy's ``act(task,
    history)`` returning ``None`` ends it).

    Observations are recorded with the env's privileged state (:func:`recorded`); text that
    cannot be UTF-8 encoded, in observations and actions alike, is recorded as visible escapes
    (:func:`agentworld.core.escapes.visible`); an action is escaped before the env runs it, so
    the recorded action is the one run. An episode in which the environment restarted its
    server or shell (a step whose ``info["restarted"]`` is true: it died or hung) is marked:
    ``metadata["restarted_steps"]`` lists those steps (0-based), so that data filters can
    drop or keep them. An episode of a tool environment (steps with ``info["tool"]``) gets
    ``metadata["coverage"]`` (:func:`agentworld.core.tool_coverage.episode_coverage`: its
    share of non-error responses, the tools that answered without an error, its response
    shapes)."""
    if isinstance(policy, ResettablePolicy):
        policy.reset(seed)
    [run] = rollout(
        [env],
        each(lambda episode: visible_action(policy.act(task, episode.history))),
        max_steps,
        tasks=[task],
        seeds=[seed],
        record=recorded,
    )
    steps = [
        Step(
            action=t.action,
            observation=t.observation,
            reward=t.reward,
            terminated=t.terminated,
            truncated=t.truncated,
            info=t.info,
        )
        for t in run.transitions
    ]
    restarts = [i for i, step in enumerate(steps) if step.info.get("restarted")]
    episode = Episode(
        domain=domain.name,
        task=task,
        system_prompt=(
            env.system_prompt(task) if isinstance(env, PromptingEnvironment)
            else domain.system_prompt(task)
        ),
        initial_observation=run.initial_observation,
        steps=steps,
        metadata={
            "env_version": domain.version,
            "policy": policy.name,
            "seed": seed,
            "source": "real",
            **world_model_contract(domain),
            **({"restarted_steps": restarts} if restarts else {}),
        },
    )
    coverage = episode_coverage(episode)
    if coverage is not None:
        episode.metadata["coverage"] = coverage
    return episode


def episode_task(policy: Any, sampled: Task | None, seed: int) -> Task | None:
    """The task ``policy`` plays in the episode with ``seed``: its own ``task(seed)`` when it
    brings its tasks (:class:`~agentworld.core.protocols.TaskingPolicy`), else ``sampled`` (the
    domain sampler's task for that episode). Every executor asks here."""
    return policy.task(seed) if isinstance(policy, TaskingPolicy) else sampled


def collect_episode(
    domain: Domain, env: Any, policy_name: str, sampled: Task | None, *, seed: int,
    max_steps: int,
) -> Episode:
    """Episode ``seed`` of a collection: the domain's policy named ``policy_name`` plays
    :func:`episode_task` in ``env`` (:func:`run_episode`). What a collection thread and a Ray
    worker (:mod:`agentworld.core.ray_collect`) both run, so they record the same episodes."""
    policy = domain.policies()[policy_name]
    task = episode_task(policy, sampled, seed)
    return run_episode(domain, env, task, policy, seed=seed, max_steps=max_steps)


def world_model_contract(domain: Any) -> dict[str, Any]:
    """The rendering facts a domain fixes for its world model, stored in episode metadata:
    ``rewards`` (the answer carries the reward footer) when ``domain.defines_rewards`` and
    ``history_window`` (turns of history shown) when the domain sets one."""
    hooks = domain_hooks(domain)
    out: dict[str, Any] = {}
    if hooks.defines_rewards:
        out["rewards"] = True
    if hooks.history_window is not None:
        out["history_window"] = int(hooks.history_window)
    return out


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
        tasks = domain.tasks().sample(n, seed=seed)

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
