"""The paged engine behind the ``hf`` backend and the Simulator: episode KV pinned between
steps, released by close, shared by fork, per-episode errors, and the static engine kept."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentworld.sim import SimEnv, Simulator
from agentworld.sim.backends.hf import HFBackend, HFWorldModel
from agentworld.sim.engine import EngineLoop, PagedEngine
from agentworld.sim.batch_loop import BatchLoop
from agentworld.sim.generation import StaticBatchEngine
from agentworld.sim.simulator import FailedPrediction


def engine_of(wm: HFWorldModel) -> PagedEngine:
    assert isinstance(wm.engine, EngineLoop)
    return wm.engine.engine


def snapshot(wm: HFWorldModel) -> tuple[int, int, int]:
    """(queried prompt tokens, cached prompt tokens, held blocks), read on the loop thread."""

    assert isinstance(wm.engine, EngineLoop)
    stats = wm.engine.stats()
    return stats.num_prompt_tokens, stats.num_cached_tokens, stats.num_used_blocks


def test_paged_is_default_and_static_is_selectable(trained_dir: Path) -> None:
    paged = HFBackend().load(str(trained_dir), max_new_tokens=40)
    static = HFBackend().load(str(trained_dir), max_new_tokens=40, engine="static")
    assert isinstance(paged.engine, EngineLoop) and paged.loop is paged.engine
    assert isinstance(static.engine, StaticBatchEngine) and isinstance(static.loop, BatchLoop)
    requests = [
        [
            {"role": "system", "content": f"You simulate a terminal {i}."},
            {"role": "user", "content": "ls"},
        ]
        for i in range(3)
    ]
    assert [p.text for p in paged.predict(requests)] == [p.text for p in static.predict(requests)]
    with pytest.raises(ValueError, match="engine must be"):
        HFWorldModel(paged.model, paged.tokenizer, engine="fast")  # type: ignore[arg-type]


def test_episodes_stay_pinned_between_steps_and_close_releases(trained_dir: Path) -> None:
    wm = HFBackend().load(str(trained_dir), max_new_tokens=40)
    sim = Simulator(wm)

    async def main() -> None:
        ids = [await sim.open("You simulate a terminal.", f"user@host:~$ {i}") for i in range(4)]
        previous: list[list[int]] = []
        for t in range(3):
            prompts = [
                wm.encode([*sim.messages(i), {"role": "user", "content": "ls"}]) for i in ids
            ]
            before = snapshot(wm)
            results = await asyncio.gather(*(sim.step(i, "ls") for i in ids))
            queried, cached, _ = (a - b for a, b in zip(snapshot(wm), before))
            assert all(obs == "hello.txt" for obs, _ in results)
            assert queried == sum(len(p) for p in prompts)
            if t > 0:  # the previous prompt and most of the answer came from pinned KV
                assert cached >= sum(len(p) for p in previous) + 4 * 5
            previous = prompts
        assert set(engine_of(wm).episodes) == set(ids)
        assert snapshot(wm)[2] > 0
        await asyncio.gather(*(sim.close(i) for i in ids))

    asyncio.run(main())
    snapshot(wm)  # the closes ran before this read
    assert snapshot(wm)[2] == 0 and not engine_of(wm).episodes


def test_fork_shares_kv_and_matches_an_unforked_episode(trained_dir: Path) -> None:
    wm = HFBackend().load(str(trained_dir), max_new_tokens=40)
    static = HFBackend().load(str(trained_dir), max_new_tokens=40, engine="static")
    sim = Simulator(wm)
    parent = sim.open_sync("You simulate a terminal.", "$ ")
    first = wm.encode([*sim.messages(parent), {"role": "user", "content": "ls"}])
    sim.step_many([(parent, "ls")])
    child = sim.fork_sync(parent)
    assert sim.messages(child) == sim.messages(parent)
    before = snapshot(wm)
    results = sim.step_many([(parent, "pwd"), (child, "cat notes.md")])
    queried, cached, _ = (a - b for a, b in zip(snapshot(wm), before))
    # the child's history came from the parent's blocks, just like the parent's own
    assert cached >= 2 * len(first) and queried - cached < 50
    for episode_id, (obs, info) in zip((parent, child), results):
        messages = sim.messages(episode_id)[:-1]
        [expected] = static.predict([messages])
        assert info["raw"] == expected.text and obs == "hello.txt"
    sim.close_sync(parent)
    sim.close_sync(child)
    sim.close_sync(child)  # unknown ids are ignored
    assert snapshot(wm)[2] == 0


def test_request_the_kv_budget_cannot_hold_fails_alone(trained_dir: Path) -> None:
    wm = HFBackend().load(str(trained_dir), max_new_tokens=40, engine_options={"num_blocks": 12})
    sim = Simulator(wm, max_wait_s=0.05)

    async def main() -> None:
        small = [await sim.open("You simulate a terminal.", "$ ") for _ in range(2)]
        big = await sim.open("You simulate a terminal.", "hello.txt " * 60)  # > 12 blocks
        results = await asyncio.gather(
            *(sim.step(i, "ls") for i in [*small, big]), return_exceptions=True
        )
        assert [r[0] for r in results[:2]] == ["hello.txt", "hello.txt"]  # type: ignore[index]
        assert isinstance(results[2], RuntimeError)
        assert "KV blocks" in str(results[2]) and big in str(results[2])
        assert len(sim.messages(big)) == 1  # history unchanged: the step can be retried
        with pytest.raises(KeyError):
            await sim.step("never-opened", "ls")
        await sim.close(small[0])
        with pytest.raises(KeyError):  # a step on a closed episode
            await sim.step(small[0], "ls")
        assert (await sim.step(small[1], "pwd"))[0] == "hello.txt"

    asyncio.run(main())
    [(obs, info)] = sim.step_many([(sim.open_sync("sys", "x " * 200), "ls")])
    assert obs is None and "KV blocks" in info["error"] and not info["parsed"]
    [failed] = wm.predict(
        [[{"role": "system", "content": "y " * 200}, {"role": "user", "content": "ls"}]]
    )
    assert isinstance(failed, FailedPrediction) and failed.observation is None
    env = SimEnv(sim, initial_observation="x " * 200)
    env.reset()
    obs, reward, terminated, truncated, info = env.step("ls")
    assert (obs, truncated, info["truncated_reason"]) == ("", True, "error")
    assert "KV blocks" in info["error"]


def test_simulators_share_one_engine_and_its_batches(trained_dir: Path) -> None:
    """Two simulators on one world model: their steps join the engine's running batches (no
    batching in front of the engine), and every episode is pinned in the one engine."""
    wm = HFBackend().load(str(trained_dir), max_new_tokens=40)
    sims = [Simulator(wm), Simulator(wm)]

    async def main() -> list[str | None]:
        ids = [(s, await s.open("You simulate a terminal.", f"$ {n}")) for n, s in enumerate(sims)]
        ids += [(sims[0], await sims[0].open("You simulate a terminal.", "$")) for _ in range(2)]
        results = await asyncio.gather(*(s.step(i, "ls") for s, i in ids))
        return [obs for obs, _ in results]

    assert isinstance(wm.engine, EngineLoop)
    before = wm.engine.stats()
    assert asyncio.run(main()) == ["hello.txt"] * 4
    after = wm.engine.stats()
    assert len(engine_of(wm).episodes) == 4
    # four answers of ~15 tokens each, decoded together: far fewer passes than four one by one
    assert after.num_steps - before.num_steps < (after.num_generated_tokens - before.num_generated_tokens) / 2
