"""Environments on Ray actors, stepped a batch at a time by a driver that holds the policy.

The shape of verl's and OpenRLHF's agent rollouts: actors hold the environments (for a
simulated environment, the world model too: an engine, or a client to a server), the driver
(the trainer) holds the policy, sends each turn's actions and gets observations, rewards and
flags back. :class:`RayEnvironments` is an :class:`~agentworld.core.protocols.EnvironmentBatch`,
so :func:`agentworld.core.rollout.rollout` and the GRPO trainer of language-model agents
(``rollout_executor = "ray"``) play it as they play environments of their own process.

Environment ``i`` of ``n`` lives on actor ``i // ceil(n / actors)``: consecutive environments
(the ``G`` episodes of a GRPO group) share an actor, and so its world model's prefix cache.
Each actor makes its environments with ``env_factory()`` (pickled to it by Ray's cloudpickle:
every node needs agentworld and what the factory imports) and steps its part of a batch in
``workers`` threads, as :class:`~agentworld.core.env_batch.LocalEnvironments` does.

An actor that dies (killed, out of memory, its node lost) loses the state of its
environments, never what the driver recorded. The driver keeps, for each environment, the
reset arguments and the actions of its episode; an episode whose actor died is re-run on a
fresh actor from ``reset`` with the same seed and options and the same actions (the actions
a seeded policy samples again on the same observations), then goes on; the step that
returns it carries ``info["retried"] = 1``. A replay whose observations, rewards or flags
differ from the recorded ones is an error (the environment is not deterministic in its seed
and actions), and so is a second death of the same episode
(:class:`~agentworld.core.ray_collect.WorkerLostError`). An episode that had ended when its
actor died is not re-run.

Needs ``pip install 'agentworld-core[ray]'``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentworld.core.env_batch import LocalEnvironments
from agentworld.core.ray_collect import RETRIES, WorkerLostError, connect

Result = tuple[Any, float, bool, bool, dict[str, Any]]


class EnvShard:
    """A Ray actor's state: ``num_envs`` environments made by ``env_factory()`` on first use,
    reset and stepped in ``workers`` threads."""

    def __init__(self, env_factory: Callable[[], Any], num_envs: int, workers: int) -> None:
        self.env_factory, self.num_envs, self.workers = env_factory, num_envs, workers
        self.envs: LocalEnvironments | None = None

    def _local(self) -> LocalEnvironments:
        if self.envs is None:
            made = [self.env_factory() for _ in range(self.num_envs)]
            self.envs = LocalEnvironments(made, workers=self.workers)
        return self.envs

    def reset(
        self, slots: list[int], seeds: list[int | None], options: list[dict[str, Any] | None]
    ) -> list[tuple[Any, dict[str, Any]]]:
        """``[len(slots)]`` ``(observation, info)`` (``LocalEnvironments.reset_batch``)."""
        return self._local().reset_batch(slots, seeds, options)

    def step(
        self, slots: list[int], actions: list[Any], replays: dict[int, Replay]
    ) -> tuple[list[Result], dict[int, list[Result]]]:
        """Re-run the episodes of ``replays`` (by slot: reset, then their recorded actions, all
        in lockstep), then step ``slots`` with ``actions``; returns ``(results [len(slots)],
        replayed results by slot)``."""
        envs = self._local()
        redone: dict[int, list[Result]] = {}
        if replays:
            order = sorted(replays)
            envs.reset_batch(order, [replays[s].seed for s in order],
                             [replays[s].options for s in order])
            for turn in range(max(len(replays[s].actions) for s in order)):
                now = [s for s in order if turn < len(replays[s].actions)]
                results = envs.step_batch(now, [replays[s].actions[turn] for s in now])
                for s, result in zip(now, results):
                    redone.setdefault(s, []).append(result)
        return envs.step_batch(slots, actions), redone

    def close(self) -> None:
        """Close the environments."""
        if self.envs is not None:
            self.envs.close()
            self.envs = None


@dataclass(slots=True)
class Replay:
    """What the driver keeps of one environment's episode to re-run it: the reset arguments,
    the actions sent and what each step returned (observation, reward, terminated,
    truncated)."""

    seed: int | None
    options: dict[str, Any] | None
    actions: list[Any] = field(default_factory=list)
    seen: list[tuple[Any, float, bool, bool]] = field(default_factory=list)
    retries: int = 0
    lost: bool = False  # its actor died since its last step

    @property
    def ended(self) -> bool:
        return bool(self.seen) and (self.seen[-1][2] or self.seen[-1][3])


class RayEnvironments:
    """``num_envs`` environments made by ``env_factory()`` on ``actors`` Ray actors (one CPU
    each, at most the cluster's CPUs), an :class:`~agentworld.core.protocols.EnvironmentBatch`.

    Args:
        env_factory: Makes one environment (Gymnasium ``Env`` API); called in the actors.
        num_envs: Environments in all (>= 1).
        actors: Ray actors (>= 1); fewer when the cluster has fewer CPUs or there are fewer
            environments.
        address: Ray cluster (:func:`agentworld.core.ray_collect.connect`; ``None``: the running
            session, ``$RAY_ADDRESS``, or a new local cluster).
        workers: Threads stepping environments in each actor.

    Raises:
        ValueError: ``num_envs`` or ``actors`` below 1.
        ModuleNotFoundError: Ray is not installed (names the extra).
        ConnectionError: no cluster answers at ``address`` (one line).
    """

    def __init__(
        self,
        env_factory: Callable[[], Any],
        num_envs: int,
        *,
        actors: int = 2,
        address: str | None = None,
        workers: int = 8,
    ) -> None:
        for name, value in (("num_envs", num_envs), ("actors", actors), ("workers", workers)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        self.ray, self._started = connect(address, "rollout_executor='ray'")
        self.num_envs = num_envs
        cpus = int(self.ray.cluster_resources().get("CPU", 1))
        count = max(1, min(actors, num_envs, cpus))
        self.per_actor = -(-num_envs // count)
        self.num_actors = -(-num_envs // self.per_actor)
        self._remote = self.ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(EnvShard)
        self._factory, self._workers = env_factory, workers
        self.actors: list[Any] = []
        self._spawned: list[Any] = []  # every actor started, to kill at close
        self.replays: list[Replay | None] = [None] * num_envs
        try:
            self.actors = [self._start(a) for a in range(self.num_actors)]
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return self.num_envs

    def reset_batch(
        self,
        indices: Sequence[int],
        seeds: Sequence[int | None],
        options: Sequence[dict[str, Any] | None],
    ) -> list[tuple[Any, dict[str, Any]]]:
        """``[len(indices)]`` ``(observation, info)``; an actor that dies during the call is
        replaced and its resets run again (``info["retried"] = 1``).

        Raises:
            WorkerLostError: an environment's actor died twice in this episode.
        """
        for k, i in enumerate(indices):
            self.replays[i] = Replay(seeds[k], options[k])

        def send(actor: Any, items: list[tuple[int, int]]) -> Any:
            slots = [i % self.per_actor for _, i in items]
            return actor.reset.remote(slots, [seeds[k] for k, _ in items],
                                      [options[k] for k, _ in items])

        out = self._dispatch(indices, send, lambda got, items: got)
        return [(obs, self._marked(i, info)) for i, (obs, info) in zip(indices, out)]

    def step_batch(self, indices: Sequence[int], actions: Sequence[Any]) -> list[Result]:
        """``[len(indices)]`` step results; an episode whose actor died is re-run on a fresh
        actor first (module docstring) and its result carries ``info["retried"] = 1``.

        Raises:
            WorkerLostError: an environment's actor died twice in this episode.
            RuntimeError: ``reset_batch`` was not called for an environment, or a re-run
                episode's observations differ from the recorded ones.
        """
        for i in indices:
            if self.replays[i] is None:
                raise RuntimeError(f"environment {i}: call reset_batch before step_batch")

        def send(actor: Any, items: list[tuple[int, int]]) -> Any:
            replays = {}
            for _, i in items:
                replay = self.replays[i]
                assert replay is not None
                if replay.lost:
                    replays[i % self.per_actor] = Replay(replay.seed, replay.options,
                                                         list(replay.actions))
            return actor.step.remote([i % self.per_actor for _, i in items],
                                     [actions[k] for k, _ in items], replays)

        def receive(got: Any, items: list[tuple[int, int]]) -> list[Result]:
            results, redone = got
            for _, i in items:
                self._check_replay(i, redone.get(i % self.per_actor))
            return results

        out = self._dispatch(indices, send, receive)
        for i, action, (obs, reward, terminated, truncated, info) in zip(indices, actions, out):
            replay = self.replays[i]
            assert replay is not None
            replay.actions.append(action)
            replay.seen.append((obs, reward, terminated, truncated))
        return [(obs, reward, term, trunc, self._marked(i, info))
                for i, (obs, reward, term, trunc, info) in zip(indices, out)]

    def close(self) -> None:
        """Close the environments, kill the actors, and shut down a Ray session this object
        started."""
        try:
            if self.actors:
                self.ray.get([a.close.remote() for a in self.actors])
        except self.ray.exceptions.RayActorError:
            pass  # a dead actor has nothing left to close
        finally:
            for actor in self._spawned:
                self.ray.kill(actor)
            self.actors, self._spawned = [], []
            if self._started:
                self.ray.shutdown()
                self._started = False

    def _start(self, a: int) -> Any:
        size = min(self.per_actor, self.num_envs - a * self.per_actor)
        actor = self._remote.remote(self._factory, size, self._workers)
        self._spawned.append(actor)
        return actor

    def _dispatch(
        self,
        indices: Sequence[int],
        send: Callable[[Any, list[tuple[int, int]]], Any],
        receive: Callable[[Any, list[tuple[int, int]]], list[Any]],
    ) -> list[Any]:
        """Send each actor its part of the call (``(position, env index)`` items), gather the
        results in the order of ``indices``; an actor that died is replaced and its part sent
        again, its environments' episodes marked for a re-run."""
        out: list[Any] = [None] * len(indices)
        todo: dict[int, list[tuple[int, int]]] = {}
        for k, i in enumerate(indices):
            todo.setdefault(i // self.per_actor, []).append((k, i))
        while todo:
            refs = {a: send(self.actors[a], items) for a, items in todo.items()}
            failed: dict[int, list[tuple[int, int]]] = {}
            for a, ref in refs.items():
                try:
                    got = receive(self.ray.get(ref), todo[a])
                except self.ray.exceptions.RayActorError as e:
                    self._lose(a, todo[a], e)
                    failed[a] = todo[a]
                    continue
                for (k, i), result in zip(todo[a], got):
                    out[k] = result
                    replay = self.replays[i]
                    assert replay is not None
                    replay.lost = False
            todo = failed
        return out

    def _lose(self, a: int, items: list[tuple[int, int]], error: Exception) -> None:
        """Actor ``a`` died: each episode it held that was running (or in this call) is to be
        re-run, once; then a fresh actor takes its place.

        Raises:
            WorkerLostError: an episode of this call had been re-run already.
        """
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        in_call = {i for _, i in items}
        for i in range(a * self.per_actor, min((a + 1) * self.per_actor, self.num_envs)):
            replay = self.replays[i]
            if replay is None or (i not in in_call and (replay.ended or replay.lost)):
                continue  # never reset, over, or already waiting for its re-run
            if replay.retries >= RETRIES:
                raise WorkerLostError(
                    f"environment {i}: its Ray actor died {replay.retries + 1} times in one "
                    f"episode ({first})"
                )
            replay.retries += 1
            replay.lost = True
        self.actors[a] = self._start(a)

    def _check_replay(self, i: int, redone: list[Result] | None) -> None:
        replay = self.replays[i]
        assert replay is not None
        if redone is None:
            return
        got = [(obs, reward, term, trunc) for obs, reward, term, trunc, _ in redone]
        for turn, (a, b) in enumerate(zip(got, replay.seen)):
            if a != b:
                raise RuntimeError(
                    f"environment {i}: re-run after its Ray actor died, step {turn + 1} gave "
                    f"{a!r}, not the recorded {b!r}; the environment must be deterministic in "
                    f"(seed, options, actions) to be retried"
                )

    def _marked(self, i: int, info: dict[str, Any]) -> dict[str, Any]:
        replay = self.replays[i]
        assert replay is not None
        return {**info, "retried": replay.retries} if replay.retries else info
