"""Ray collection and policies that bring their own tasks (issue 46, item 2): with
``executor="ray"`` the terminal's ``real`` and ``handwritten`` policies got the sampler's task
and 0 steps. Both executors now ask the same function which task a policy plays
(:func:`agentworld.core.collect.collect_episode`): the quickstart's mix collected on a local Ray
cluster gives the non-empty episodes, tasks and policies that threads give."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from agentworld.core import plugins
from agentworld.core.collect import collect
from agentworld.core.protocols import TaskingPolicy

QUICKSTART = Path(__file__).parents[2] / "packages/app/src/agentworld/app/quickstart.toml"


def summary(episodes) -> list[tuple]:
    return [(e.metadata["policy"], e.task.id, len(e.steps)) for e in episodes]


def test_a_ray_worker_plays_the_task_a_tasking_policy_brings() -> None:
    """The actor's code run in this process (no cluster): its episode is the policy's task."""
    from agentworld.core.ray_collect import EpisodeWorker

    domain = plugins.get_domain("terminal")
    policy = domain.policies()["handwritten"]
    assert isinstance(policy, TaskingPolicy)
    [sampled] = domain.tasks().sample(1, seed=0)
    worker = EpisodeWorker(domain, {}, max_steps=12)
    try:
        episode = worker.run(sampled, "handwritten", 7)
    finally:
        worker.close()
    assert episode.task.id == policy.task(7).id != sampled.id
    assert len(episode.steps) > 0


def test_ray_collects_the_quickstart_mix_as_threads_do() -> None:
    ray = pytest.importorskip("ray")
    mix = tomllib.loads(QUICKSTART.read_text())["collect"]["policies"]
    assert set(mix) == {"scripted", "random", "real"}
    domain = plugins.get_domain("terminal")
    here = collect(domain, 6, policies=mix, seed=0, workers=2, max_steps=12)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             _node_ip_address="127.0.0.1")
    try:
        on_ray = collect(domain, 6, policies=mix, seed=0, workers=2, max_steps=12,
                         executor="ray")
    finally:
        ray.shutdown()
    assert {e.metadata["policy"] for e in here} == {"scripted", "random", "real"}
    assert all(len(e.steps) > 0 for e in here)
    assert summary(on_ray) == summary(here)  # same tasks, policies and step counts
    real = [e for e in on_ray if e.metadata["policy"] == "real"]
    assert real and all(e.task.id.startswith("real-") for e in real)
