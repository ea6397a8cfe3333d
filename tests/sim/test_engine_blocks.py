"""Block pool accounting: reference counts, chained hashes checked against token ids, LRU
reuse of freed cached blocks, and a hypothesis state machine of random
open/step/close/fork sequences that checks outputs and accounting after every rule."""

from __future__ import annotations

import pytest
from engine_fakes import check_accounting, fake_engine, reference
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

from agentworld.sim.engine.blocks import BlockPool
from agentworld.sim.sampling import SamplingParams


def test_allocate_release_and_ref_counts() -> None:
    pool = BlockPool(3, 4)
    a, b = pool.allocate(), pool.allocate()
    assert a != b and pool.num_free_blocks == 1 and pool.blocks[a].ref_count == 1
    pool.acquire(a)
    pool.release(a)
    assert pool.blocks[a].ref_count == 1 and pool.num_free_blocks == 1
    pool.release(a)
    pool.release(b)
    assert pool.num_free_blocks == 3
    with pytest.raises(AssertionError, match="released more often"):
        pool.release(a)  # ref counts never go negative
    pool.check()
    for _ in range(3):
        pool.allocate()
    with pytest.raises(RuntimeError, match="exhausted"):
        pool.allocate()


def test_hash_chain_salt_and_collision_check() -> None:
    pool = BlockPool(8, 2, salt="v1")
    h1 = pool.hash_block(None, [1, 2])
    h2 = pool.hash_block(h1, [3, 4])
    assert h2 != pool.hash_block(pool.hash_block(None, [9, 9]), [3, 4])  # chained on the prefix
    assert BlockPool(8, 2, salt="v2").hash_block(None, [1, 2]) != h1  # salted by model version
    assert BlockPool(8, 2, salt="v1").hash_block(None, [1, 2]) == h1  # deterministic
    block = pool.allocate()
    assert pool.seal(block, h1, [1, 2])
    assert pool.lookup(h1, [1, 2]) == block
    # A colliding hash (same key, other tokens) is a miss, never a wrong hit.
    assert pool.lookup(h1, [1, 3]) is None
    other = pool.allocate()
    assert not pool.seal(other, h1, [7, 7])  # the first owner of a hash keeps it
    assert pool.lookup(h1, [7, 7]) is None and pool.blocks[other].hash is None
    pool.check()


def test_engine_never_serves_a_colliding_block() -> None:
    engine = fake_engine(num_blocks=16, block_size=4)
    engine.pool.hash_block = lambda parent, tokens: 42  # type: ignore[method-assign]
    p1, p2 = [1, 2, 3, 4, 5, 6], [9, 8, 7, 6, 5, 4]
    outs = engine.generate([p1], SamplingParams(max_new_tokens=3))
    outs += engine.generate([p2], SamplingParams(max_new_tokens=3))
    assert [o.token_ids for o in outs] == [reference(p1, 3), reference(p2, 3)]
    assert [o.num_cached_tokens for o in outs] == [0, 0]
    assert engine.generate([p1], SamplingParams(max_new_tokens=3))[0].num_cached_tokens == 4


def test_freed_cached_blocks_are_reused_lru_first() -> None:
    pool = BlockPool(4, 1)
    blocks = [pool.allocate() for _ in range(4)]
    parent = None
    for i, block in enumerate(blocks):
        parent = pool.hash_block(parent, [i])
        pool.seal(block, parent, [i])
    for block in (blocks[2], blocks[0], blocks[3]):  # release order = recency
        pool.release(block)
    assert pool.num_cached_blocks == 3 and pool.num_free_blocks == 3
    assert pool.allocate() == blocks[2] and pool.num_evictions == 1
    assert pool.blocks[blocks[2]].hash is None
    pool.acquire(blocks[0])  # a prefix hit takes a cached block out of the LRU
    assert pool.allocate() == blocks[3]
    pool.release(blocks[1])
    pool.release(blocks[0])
    pool.check()
    fresh = BlockPool(2, 1)
    a = fresh.allocate()
    fresh.seal(a, fresh.hash_block(None, [5]), [5])
    fresh.release(a)
    assert fresh.allocate() != a  # a never-hashed free block goes before a cached one
    assert fresh.lookup(fresh.hash_block(None, [5]), [5]) == a


class EngineMachine(RuleBasedStateMachine):
    """Random episode traffic on a small pool (eviction and preemption are frequent)."""

    episodes = Bundle("episodes")

    def __init__(self) -> None:
        super().__init__()
        self.engine = fake_engine(num_blocks=12, block_size=4, max_num_batched_tokens=16)
        self.history: dict[str, list[int]] = {}
        self.previous: dict[str, list[int]] = {}  # prompt of each episode's last step
        self.next_id = 0
        self.system = [1, 2, 3, 4, 5, 6, 7]  # a shared system prompt

    def _new_id(self) -> str:
        self.next_id += 1
        return f"e{self.next_id}"

    @rule(target=episodes, shared=st.booleans(), obs=st.lists(st.integers(0, 63), max_size=6))
    def open(self, shared: bool, obs: list[int]) -> str:
        episode_id = self._new_id()
        self.history[episode_id] = (self.system if shared else []) + obs + [8]
        return episode_id

    @rule(
        data=st.data(),
        actions=st.lists(st.lists(st.integers(0, 63), max_size=5), min_size=1, max_size=4),
        max_new=st.integers(1, 6),
    )
    def step(self, data: st.DataObject, actions: list[list[int]], max_new: int) -> None:
        live = sorted(self.history)
        if not live:
            return
        chosen = data.draw(
            st.lists(st.sampled_from(live), min_size=1, max_size=len(actions), unique=True)
        )
        prompts = []
        for episode_id, action in zip(chosen, actions):
            history = self.history[episode_id]
            if data.draw(st.integers(0, 4)) == 0 and episode_id in self.previous:
                history = self.previous[episode_id]  # retry the last step with another action
            history = history + action
            if len(history) > 30:  # rewrite the history as a context fitter would
                keep = data.draw(st.integers(1, 12))
                history = history[:keep] + history[-12:]
            prompts.append(history)
        params = SamplingParams(max_new_tokens=max_new)
        outputs = self.engine.generate(prompts, params, episode_ids=chosen)
        for episode_id, history, output in zip(chosen, prompts, outputs):
            assert output.error is None, output.error
            assert output.token_ids == reference(history, max_new)
            self.previous[episode_id] = history
            self.history[episode_id] = history + output.token_ids

    @rule(episode_id=consumes(episodes))
    def close(self, episode_id: str) -> None:
        if episode_id in self.engine.episodes:
            self.engine.close(episode_id)
        else:
            with pytest.raises(KeyError):
                self.engine.close(episode_id)
        self.history.pop(episode_id)
        self.previous.pop(episode_id, None)

    @rule(target=episodes, parent=episodes)
    def fork(self, parent: str) -> str:
        child = self._new_id()
        if parent in self.engine.episodes:
            self.engine.fork(parent, child)
        self.history[child] = list(self.history[parent])
        if parent in self.previous:
            self.previous[child] = list(self.previous[parent])
        return child

    @rule(target=episodes, parent=episodes, a=st.integers(0, 63), b=st.integers(0, 63))
    def fork_and_step_both(self, parent: str, a: int, b: int) -> str:
        """Fork, then step parent and child together: both write into the shared last block."""
        child = self.fork(parent)
        prompts = [self.history[parent] + [a], self.history[child] + [b]]
        outputs = self.engine.generate(
            prompts, SamplingParams(max_new_tokens=2), episode_ids=[parent, child]
        )
        for episode_id, history, output in zip((parent, child), prompts, outputs):
            assert output.token_ids == reference(history, 2)
            self.history[episode_id] = history + output.token_ids
        return child

    @rule(tokens=st.lists(st.integers(0, 63), min_size=1, max_size=12))
    def one_off(self, tokens: list[int]) -> None:
        [output] = self.engine.generate([self.system + tokens], SamplingParams(max_new_tokens=3))
        assert output.token_ids == reference(self.system + tokens, 3)

    @invariant()
    def accounting(self) -> None:
        check_accounting(self.engine)
        assert not self.engine.has_unfinished()

    def teardown(self) -> None:
        for episode_id in list(self.engine.episodes):
            self.engine.close(episode_id)
        check_accounting(self.engine)
        assert self.engine.pool.num_free_blocks == self.engine.pool.num_blocks
        assert all(b.ref_count == 0 for b in self.engine.pool.blocks)


EngineMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestEngineStateMachine = EngineMachine.TestCase
