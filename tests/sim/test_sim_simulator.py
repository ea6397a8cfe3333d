"""Simulator: batching of concurrent steps into one predict call, episode histories."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentworld.core.builtins import ConstantWorldModel
from agentworld.core.formats import system_message, wrap_observation
from agentworld.core.types import Episode, Observation, Prediction, Task
from agentworld.sim import Simulator
from agentworld.sim.backends.hf import HFBackend


class Counting:
    """A real world model wrapped to record the batch size of every predict call."""

    def __init__(self, inner: object):
        self.inner = inner
        self.calls: list[int] = []

    def predict(
        self, requests: Sequence[list[dict[str, str]]], *, max_new_tokens: int | None = None
    ) -> list[Prediction]:
        self.calls.append(len(requests))
        return self.inner.predict(requests, max_new_tokens=max_new_tokens)  # type: ignore[attr-defined]


TASK = Task(id="t1", domain="terminal", instruction="create hello.txt")


def test_concurrent_steps_are_one_predict_call(trained_dir: Path) -> None:
    wm = Counting(HFBackend().load(str(trained_dir), max_new_tokens=40))
    sim = Simulator(wm, max_batch=64)

    async def main() -> list[tuple[str | None, dict]]:
        ids = [await sim.open("You simulate a terminal.", f"$ {i}", TASK) for i in range(8)]
        results = await asyncio.gather(*(sim.step(i, f"ls {n}") for n, i in enumerate(ids)))
        second = await asyncio.gather(*(sim.step(i, "pwd") for i in ids))
        for i in ids:
            messages = sim.messages(i)
            assert [m["role"] for m in messages] == [
                "system",
                "user",
                "assistant",
                "user",
                "assistant",
            ]
            assert messages[3:] == [
                {"role": "user", "content": "pwd"},
                {"role": "assistant", "content": wrap_observation("hello.txt")},
            ]
        await asyncio.gather(*(sim.close(i) for i in ids))
        return results + second

    results = asyncio.run(main())
    assert wm.calls == [8, 8]
    assert all(
        obs == "hello.txt" and info["parsed"] and info["num_tokens"] > 0 for obs, info in results
    )
    assert [info["turn"] for _, info in results] == [0] * 8 + [1] * 8
    assert len(sim) == 0


def test_max_batch_splits_calls() -> None:
    wm = Counting(ConstantWorldModel("copy-previous"))
    sim = Simulator(wm, max_batch=3)

    async def main() -> list[tuple[str | None, dict]]:
        ids = [await sim.open("", f"obs {i}") for i in range(7)]
        return await asyncio.gather(*(sim.step(i, "x") for i in ids))

    results = asyncio.run(main())
    assert wm.calls == [3, 3, 1]
    assert [obs for obs, _ in results] == [f"obs {i}" for i in range(7)]


def test_system_message_matches_training_format() -> None:
    sim = Simulator(ConstantWorldModel("empty"))
    episode_id = sim.open_sync("You simulate a terminal.", "$ ", TASK)
    expected = system_message(
        Episode(
            domain="terminal",
            task=TASK,
            system_prompt="You simulate a terminal.",
            initial_observation=Observation(text="$ "),
        )
    )
    assert sim.messages(episode_id) == [{"role": "system", "content": expected}]


def test_malformed_answer_keeps_history(qwen3_dir: Path) -> None:
    wm = Counting(HFBackend().load(str(qwen3_dir), max_new_tokens=10))
    sim = Simulator(wm)
    ids = [sim.open_sync("sys", "obs") for _ in range(3)]
    results = sim.step_many([(i, "ls") for i in ids])
    assert wm.calls == [3]
    for obs, info in results:
        assert obs is None and info["parsed"] is False and info["num_tokens"] == 10 and info["raw"]
    assert all(len(sim.messages(i)) == 1 for i in ids)
    assert sim.step_many([(ids[0], "retry")])[0][0] is None  # a failed step can be retried


def test_errors_and_fork() -> None:
    sim = Simulator(ConstantWorldModel("copy-previous"))
    a = sim.open_sync("", "start")
    with pytest.raises(KeyError):
        sim.step_many([("missing", "ls")])
    with pytest.raises(RuntimeError):
        sim.step_many([(a, "ls"), (a, "pwd")])
    assert sim.step_many([(a, "ls")])[0][0] == "start"  # the failed call released the episode
    b = sim.fork_sync(a)
    sim.step_many([(b, "pwd")])
    assert len(sim.messages(a)) == 3 and len(sim.messages(b)) == 5
    sim.close_sync(a)
    with pytest.raises(KeyError):
        sim.messages(a)

    async def twice() -> None:
        await asyncio.gather(sim.step(b, "x"), sim.step(b, "y"))

    with pytest.raises(RuntimeError):
        asyncio.run(twice())


def test_cancelled_step_is_dropped() -> None:
    wm = Counting(ConstantWorldModel("copy-previous"))
    sim = Simulator(wm, max_wait_s=0.05)

    async def main() -> tuple[str | None, dict]:
        a, b = sim.open_sync("", "A"), sim.open_sync("", "B")
        cancelled = asyncio.ensure_future(sim.step(a, "x"))
        kept = asyncio.ensure_future(sim.step(b, "y"))
        await asyncio.sleep(0)
        cancelled.cancel()
        result = await kept
        assert len(sim.messages(a)) == 1 and len(sim.messages(b)) == 3
        assert (await sim.step(a, "again"))[0] == "A"  # the cancelled step released the episode
        return result

    assert asyncio.run(main())[0] == "B"
    assert wm.calls == [1, 1]
