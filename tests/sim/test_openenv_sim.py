"""`agentworld serve --checkpoint`: simulated sessions on one shared world model, driven by
openenv's own WebSocket client, give exactly what :class:`SimEnv` gives for the same greedy
model and actions."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("openenv")
from agentworld.core.types import Task
from agentworld.sim import SimEnv
from agentworld.sim.backends.hf import HFBackend
from agentworld.sim.openenv import SimEnvFactory, create_app
from agentworld.sim.server.thread import ServerThread
from openenv.core.generic_client import GenericEnvClient

ACTIONS = ["ls", "cat hello.txt", "pwd"]


class FakeDomain:
    name, version = "fake", "0"

    def system_prompt(self, task: Task | None) -> str:
        return f"You simulate a Linux terminal for {task.id if task else 'free play'}."


def direct_episode(checkpoint: Path, actions: list[str], **options) -> list[tuple]:
    """(text, reward, done, raw, parsed) per step of a SimEnv run in-process."""
    env = SimEnv(HFBackend().load(str(checkpoint), max_new_tokens=40), **options)
    text, _ = env.reset(seed=0)
    rows = [(text, None, False, None, None)]
    for action in actions:
        text, reward, terminated, truncated, info = env.step(action)
        rows.append((text, reward, terminated or truncated, info["raw"], info["parsed"]))
        if terminated or truncated:
            break
    env.close()
    return rows


def served_episode(client, actions: list[str]) -> list[tuple]:
    result = client.reset(seed=0)
    rows = [(result.observation["text"], result.reward, result.done, None, None)]
    for action in actions:
        result = client.step({"text": action})
        info = result.metadata
        rows.append(
            (result.observation["text"], result.reward, result.done, info["raw"], info["parsed"])
        )
        if result.done:
            break
    return rows


def serve(checkpoint: Path, max_new_tokens: int = 40, **options) -> ServerThread:
    world_model = HFBackend().load(str(checkpoint), max_new_tokens=max_new_tokens)
    factory = SimEnvFactory(world_model, FakeDomain(), **options)
    return ServerThread(create_app(factory, name="fake", max_sessions=4))


def test_served_episode_equals_simenv(trained_dir: Path) -> None:
    options = {"domain": FakeDomain(), "initial_observation": "$ ", "max_steps": 3}
    expected = direct_episode(trained_dir, ACTIONS, **options)
    assert [row[0] for row in expected] == ["$ ", "hello.txt", "hello.txt", "hello.txt"]
    assert [row[2] for row in expected] == [False, False, False, True]  # max_steps truncation
    with serve(trained_dir, initial_observation="$ ", max_steps=3) as server:
        url = f"http://{server.host}:{server.port}"
        with GenericEnvClient(base_url=url).sync() as client:
            assert served_episode(client, ACTIONS) == expected
            state = client.state()
            assert (state["step_count"], state["done"], state["simulated"]) == (3, True, True)
            with pytest.raises(RuntimeError, match="reset first"):
                client.step({"text": "ls"})


def test_concurrent_sessions_share_the_model_and_keep_their_own_history(qwen3_dir: Path) -> None:
    """A random model answers malformed text: each step truncates the episode, and the raw
    answer (a function of the session's own history) must equal SimEnv's, session by session."""
    options = {"domain": FakeDomain(), "initial_observation": "$ "}
    first = direct_episode(qwen3_dir, ["ls"], **options)
    other = direct_episode(qwen3_dir, ["echo other"], **options)
    assert first[1][2] is True and first[1][4] is False  # truncated, not parsed
    assert first[1][3] != other[1][3]

    async def run(url: str) -> None:
        async with GenericEnvClient(base_url=url) as a, GenericEnvClient(base_url=url) as b:
            await asyncio.gather(a.reset(seed=0), b.reset(seed=0))
            got_a, got_b = await asyncio.gather(
                a.step({"text": "ls"}), b.step({"text": "echo other"})
            )
            for got, want in ((got_a, first[1]), (got_b, other[1])):
                info = got.metadata
                assert (got.observation["text"], got.done, info["raw"]) == (want[0], True, want[3])
                assert info["truncated_reason"] == "malformed" and info["parsed"] is False
            state_a, state_b = await asyncio.gather(a.state(), b.state())
            assert state_a["episode_id"] != state_b["episode_id"]
            assert state_a["step_count"] == state_b["step_count"] == 1

    with serve(qwen3_dir, initial_observation="$ ") as server:
        asyncio.run(run(f"http://{server.host}:{server.port}"))


def test_reward_and_termination_pass_through(rewarded_dir: Path) -> None:
    # the card of this checkpoint says its answers carry the reward footer (48 tokens long)
    with serve(rewarded_dir, max_new_tokens=48, initial_observation="$ ") as server:
        url = f"http://{server.host}:{server.port}"
        with GenericEnvClient(base_url=url).sync() as client:
            client.reset()
            result = client.step({"text": "ls"})
    info = result.metadata
    assert result.observation["text"] == "hello.txt" and info["parsed"] is True
    assert (result.reward, result.done, info["terminated"], info["truncated"]) == (
        1.0,
        True,
        True,
        False,
    )
