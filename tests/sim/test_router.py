"""Two real world-model servers (uvicorn on loopback, the paged engine with its prefix cache)
behind the real sglang-router: with ``cache_aware`` an episode's next turn lands where its
prefix is cached; with ``round_robin`` it does not."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import openai
import pytest

from agentworld.sim import Simulator
from agentworld.sim.backends.hf import HFBackend
from agentworld.sim.backends.openai_client import OpenAIWorldModel
from agentworld.sim.server import HFChatModel, serve_in_thread
from agentworld.sim.server.router import RouterUnavailableError, routed

SYSTEM = "You simulate a Linux terminal. Predict the output of each command. " * 3
ACTIONS = ["ls -la /tmp", "cat notes.md | grep hello", "echo world > hello.txt", "ls"]


@contextmanager
def two_replicas(checkpoint: Path) -> Iterator[list[tuple[str, object]]]:
    """Two servers of one checkpoint, each with its own engine: ``[(root URL, world model)]``."""
    with ExitStack() as stack:
        replicas = []
        for _ in range(2):
            wm = HFBackend().load(str(checkpoint), max_new_tokens=8)
            server = stack.enter_context(serve_in_thread(HFChatModel(wm), "wm"))
            replicas.append((server.base_url.removesuffix("/v1"), wm))
        yield replicas


def run_episode(client: openai.OpenAI, task: str) -> tuple[list[tuple[int, int]], list[str]]:
    """One closed-loop episode of :data:`ACTIONS`: ``[(prompt tokens, cached tokens)]`` and the
    answering server's ``system_fingerprint``, per turn."""
    messages = [{"role": "system", "content": SYSTEM + task}]
    usage, served_by = [], []
    for action in ACTIONS:
        messages.append({"role": "user", "content": action})
        response = client.chat.completions.create(
            model="wm", messages=messages, max_tokens=8, temperature=0
        )
        details = response.usage.prompt_tokens_details
        usage.append((response.usage.prompt_tokens, details.cached_tokens))
        served_by.append(response.system_fingerprint)
        messages.append({"role": "assistant", "content": response.choices[0].message.content})
    return usage, served_by


def simulated_infos(base_url: str) -> list[dict]:
    """The step infos of one :class:`Simulator` episode of :data:`ACTIONS` over the router."""
    world_model = OpenAIWorldModel("wm", base_url=base_url, max_tokens=8, retries=0)
    sim = Simulator(world_model)
    episode = sim.open_sync(SYSTEM, "user@host:~$ ")
    infos = [info for _, info in (sim.step_many([(episode, a)])[0] for a in ACTIONS)]
    sim.close_sync(episode)
    world_model.close()
    return infos


@pytest.mark.parametrize("policy", ["cache_aware", "round_robin"])
def test_cache_aware_routing_reuses_each_episodes_prefix(
    policy: str, qwen3_dir: Path, tmp_path: Path
) -> None:
    with two_replicas(qwen3_dir) as replicas, routed(
        [root for root, _ in replicas], policy=policy, log=tmp_path / "router.log"
    ) as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)
        usage, served_by = run_episode(client, "Task: find hello.")
        served = [wm.engine.engine.stats.num_requests for _, wm in replicas]
        infos = simulated_infos(base_url)  # the same, seen through the simulator's step infos
    assert sum(served) == len(ACTIONS)
    assert all(f and f.startswith("agentworld-") for f in served_by)
    block = 16  # the paged engine's default block size: only whole blocks are cached
    if policy == "cache_aware":
        assert sorted(served) == [0, len(ACTIONS)]  # the whole episode on one replica
        assert len(set(served_by)) == 1
        for (previous, _), (_, cached) in zip(usage, usage[1:], strict=False):
            assert cached >= previous // block * block - block  # the last turn's prompt was reused
        assert len({info["served_by"] for info in infos}) == 1
        assert not any("replica_changed" in info for info in infos)
    else:
        assert served == [2, 2]  # turns alternate, so turn t never finds turn t-1's prompt
        assert len(set(served_by)) == 2 and served_by[0] == served_by[2] != served_by[1]
        for (previous, _), (_, cached) in zip(usage[1:], usage[2:], strict=False):
            assert cached < previous // block * block
        # every step after the first moved to the other replica, and says so
        assert [info.get("replica_changed", False) for info in infos] == [False, True, True, True]
        assert {info["served_by"] for info in infos} == set(served_by)


def test_the_openai_backend_counts_the_prefix_hit_rate(qwen3_dir: Path) -> None:
    with two_replicas(qwen3_dir) as replicas, routed([root for root, _ in replicas]) as base_url:
        client = OpenAIWorldModel("wm", base_url=base_url, max_tokens=8)
        history = [{"role": "system", "content": SYSTEM}]
        for action in ACTIONS:
            history.append({"role": "user", "content": action})
            (prediction,) = client.predict([history])
            history.append({"role": "assistant", "content": prediction.text})
        client.close()
    assert client.num_prompt_tokens > 0
    assert 0.3 < client.prefix_hit_rate < 1.0
    stats = [wm.engine.engine.stats for _, wm in replicas]
    assert client.num_cached_tokens == sum(s.num_cached_tokens for s in stats)
    assert client.num_prompt_tokens == sum(s.num_prompt_tokens for s in stats)


def test_router_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="give the server root"):
        with routed(["http://127.0.0.1:1/v1"]):
            pass
    with pytest.raises(ValueError, match="at least one worker"):
        with routed([]):
            pass
    with pytest.raises(RouterUnavailableError, match="exited|did not answer"):
        with routed(["http://127.0.0.1:1"], policy="no-such-policy", start_s=20):  # type: ignore[arg-type]
            pass
