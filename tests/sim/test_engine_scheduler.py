"""Scheduler and engine state machine on the toy runner: every status transition, chunked
prefill mixed with decodes, admission, preemption and recompute, per-request errors,
episode pinning and forks, and the thread-driven EngineLoop."""

from __future__ import annotations

import threading

import pytest
from engine_fakes import FakeRunner, check_accounting, fake_engine, reference

from agentworld.sim.engine import EngineLoop, PagedEngine
from agentworld.sim.engine.sequence import SequenceStatus as S
from agentworld.sim.sampling import SamplingParams

GREEDY = SamplingParams(max_new_tokens=6)


def prompt(n: int, seed: int = 0) -> list[int]:
    return [(seed * 7 + 3 * i + 1) % 60 for i in range(n)]


def run(engine: PagedEngine, request_ids: list[str]) -> dict[str, object]:
    """Step until the given requests are done; their outputs by request id."""
    wanted, done = set(request_ids), {}
    while wanted - done.keys():
        for output in engine.step():
            done[output.request_id] = output
    return done


def test_one_off_request_lifecycle_and_no_leak() -> None:
    engine = fake_engine(num_blocks=16)
    request_id = engine.add_request(prompt(9), GREEDY)
    seq = engine._requests[request_id]
    assert seq.status is S.WAITING and engine.scheduler.waiting[0] is seq
    assert engine.step() == []  # prefill (9 tokens) + first token sampled
    assert seq.status is S.RUNNING and seq.num_computed_tokens == 9 and len(seq.token_ids) == 10
    outputs = run(engine, [request_id])
    out = outputs[request_id]
    assert out.token_ids == reference(prompt(9), 6) and out.finish_reason == "length"
    assert seq.status is S.FINISHED and out.logprobs is None and out.error is None
    assert engine.pool.num_free_blocks == 16 and not engine.has_unfinished()
    assert engine.runner.batches[0] == [(0, 9, True)] and engine.runner.batches[1] == [(9, 1, True)]
    check_accounting(engine)


def test_episode_is_pinned_and_prefills_only_the_new_tokens() -> None:
    engine = fake_engine(num_blocks=32)
    history = prompt(10)
    [first] = engine.generate([history], GREEDY, episode_ids=["ep"])
    seq = engine.episodes["ep"]
    assert seq.status is S.IDLE and "ep" in engine.scheduler.idle  # RUNNING -> IDLE
    assert seq.num_computed_tokens == 15 and len(seq.block_table) == 4  # last token not yet fed
    history += first.token_ids + [61, 62, 63]  # template tokens + action
    engine.runner.batches.clear()
    [second] = engine.generate([history], GREEDY, episode_ids=["ep"])  # IDLE -> WAITING -> ...
    assert second.token_ids == reference(history, 6)
    assert second.num_cached_tokens == 15
    assert engine.runner.batches[0] == [(15, 4, True)]  # last sampled token + 3 new ones
    assert engine.stats.num_prompt_tokens == 10 + len(history)
    assert engine.stats.num_cached_tokens == 15
    engine.close("ep")  # IDLE -> FINISHED
    assert seq.status is S.FINISHED and engine.pool.num_free_blocks == 32
    assert engine.pool.num_cached_blocks > 0  # full blocks stay hashed in the LRU
    check_accounting(engine)


def test_rewritten_history_falls_back_to_hashed_prefix() -> None:
    engine = fake_engine(num_blocks=32)
    system = prompt(12, seed=1)
    [out] = engine.generate([system + [5, 6, 7]], GREEDY, episode_ids=["a"])
    rewritten = system + [9, 9, 9, 9, 9]  # history cut after the system prompt
    [again] = engine.generate([rewritten], GREEDY, episode_ids=["a"])
    assert again.token_ids == reference(rewritten, 6) and again.num_cached_tokens == 12
    # another episode with the same system prompt hits the hashed blocks (3 full blocks)
    [other] = engine.generate([system + [1, 2]], GREEDY, episode_ids=["b"])
    assert other.num_cached_tokens == 12 and other.token_ids == reference(system + [1, 2], 6)
    # a shorter prompt inside the pinned history: KV truncated, a hashed block rewritten
    short = system[:6]
    [cut] = engine.generate([short], GREEDY, episode_ids=["b"])
    assert cut.token_ids == reference(short, 6) and cut.num_cached_tokens == 5
    check_accounting(engine)
    for e in ("a", "b"):
        engine.close(e)
    assert engine.pool.num_free_blocks == 32
    check_accounting(engine)


def test_chunked_prefill_mixes_with_decodes_under_the_token_budget() -> None:
    engine = fake_engine(num_blocks=64, max_num_batched_tokens=8)
    first = engine.add_request(prompt(5), SamplingParams(max_new_tokens=12))
    engine.step()
    second = engine.add_request(prompt(30, seed=2), GREEDY)
    outputs = run(engine, [first, second])
    assert outputs[first].token_ids == reference(prompt(5), 12)
    assert outputs[second].token_ids == reference(prompt(30, seed=2), 6)
    batches = engine.runner.batches
    assert all(sum(n for _, n, _ in b) <= 8 for b in batches)
    # one decode token of the first request, 7 prefill tokens of the second, no logits
    assert batches[1] == [(5, 1, True), (0, 7, False)]
    assert batches[4] == [(8, 1, True), (21, 7, False)]
    assert batches[5] == [(9, 1, True), (28, 2, True)]


def test_requests_opened_together_share_their_common_prefix() -> None:
    """A request whose next block another request computes in the same pass waits one pass and
    then reuses that block (in-batch prefix caching): the shared prompt is computed once."""
    engine = fake_engine(num_blocks=64, max_num_batched_tokens=64)
    system = prompt(12, seed=3)  # 3 full blocks of 4 tokens
    ids = [engine.add_request(system + [40 + i, 50 + i], GREEDY) for i in range(3)]
    unrelated = engine.add_request(prompt(6, seed=9), GREEDY)
    engine.step()
    # Only the first of the three and the unrelated request ran; the other two wait, in order.
    assert engine.runner.batches[0] == [(0, 14, True), (0, 6, True)]
    assert [s.request_id for s in engine.scheduler.waiting] == ids[1:]
    seqs = [engine._requests[i] for i in ids]
    engine.step()
    # Next pass: both hit the 3 sealed blocks and compute only their 2 own tokens.
    assert engine.runner.batches[1][-2:] == [(12, 2, True), (12, 2, True)]
    assert seqs[0].block_table[:3] == seqs[1].block_table[:3] == seqs[2].block_table[:3]
    outputs = run(engine, ids + [unrelated])
    assert [outputs[i].num_cached_tokens for i in ids] == [0, 12, 12]
    for i, r in zip(ids, range(3)):
        assert outputs[i].token_ids == reference(system + [40 + r, 50 + r], 6)
    check_accounting(engine)


def test_max_num_seqs_limits_running() -> None:
    engine = fake_engine(num_blocks=64, max_num_seqs=2)
    ids = [engine.add_request(prompt(3, seed=i), GREEDY) for i in range(5)]
    engine.step()
    assert len(engine.scheduler.running) == 2 and len(engine.scheduler.waiting) == 3
    outputs = run(engine, ids)
    assert max(len(b) for b in engine.runner.batches) == 2
    assert [outputs[i].token_ids for i in ids] == [
        reference(prompt(3, seed=s), 6) for s in range(5)
    ]


def test_idle_episode_is_preempted_then_recomputed() -> None:
    engine = fake_engine(num_blocks=8)  # 32 token slots
    history = prompt(13, seed=3)
    [out] = engine.generate([history], GREEDY, episode_ids=["old"])
    seq = engine.episodes["old"]
    assert seq.status is S.IDLE and len(seq.block_table) == 5
    big = prompt(20, seed=4)  # needs 7 blocks with its output: "old" must go
    [other] = engine.generate([big], SamplingParams(max_new_tokens=8))
    assert other.token_ids == reference(big, 8)
    assert seq.status is S.PREEMPTED and not seq.block_table  # IDLE -> PREEMPTED
    assert engine.stats.num_preemptions == 1 and "old" not in engine.scheduler.idle
    history += out.token_ids + [1]
    [again] = engine.generate([history], GREEDY, episode_ids=["old"])  # PREEMPTED -> WAITING
    assert again.token_ids == reference(history, 6)
    check_accounting(engine)


def test_running_request_is_preempted_and_recomputed() -> None:
    engine = fake_engine(num_blocks=6)  # 24 slots; two requests of 8 + 12 tokens cannot both grow
    params = SamplingParams(max_new_tokens=12)
    a = engine.add_request(prompt(8, seed=5), params)
    b = engine.add_request(prompt(8, seed=6), params)
    seen_waiting_again = False
    done = {}
    while len(done) < 2:
        for output in engine.step():
            done[output.request_id] = output
        seqs = list(engine._requests.values())
        if any(s.status is S.WAITING and len(s.token_ids) > 8 for s in seqs):
            seen_waiting_again = True  # RUNNING -> WAITING with tokens generated
        check_accounting(engine)
    assert seen_waiting_again and engine.stats.num_preemptions >= 1
    assert done[a].token_ids == reference(prompt(8, seed=5), 12)
    assert done[b].token_ids == reference(prompt(8, seed=6), 12)
    assert engine.pool.num_free_blocks == 6


def test_pool_full_of_cached_blocks_evicts_lru_first() -> None:
    engine = fake_engine(num_blocks=10)
    p1, p2 = prompt(12, seed=7), prompt(12, seed=8)
    engine.generate([p1], SamplingParams(max_new_tokens=1))  # 3 full blocks cached
    engine.generate([p2], SamplingParams(max_new_tokens=1))
    assert engine.pool.num_cached_blocks == 6 and engine.stats.num_evictions == 0
    engine.generate([prompt(27, seed=9)], SamplingParams(max_new_tokens=1))  # needs 7 blocks
    assert engine.stats.num_evictions == 3
    assert engine.generate([p2 + [1]], GREEDY)[0].num_cached_tokens == 12  # newest kept
    assert engine.generate([p1 + [1]], GREEDY)[0].num_cached_tokens == 0  # oldest evicted


def test_fork_shares_blocks_and_copies_the_partial_block() -> None:
    engine = fake_engine(num_blocks=32)
    history = prompt(9, seed=10)
    [out] = engine.generate([history], GREEDY, episode_ids=["parent"])
    engine.fork("parent", "child")
    parent, child = engine.episodes["parent"], engine.episodes["child"]
    assert child.status is S.IDLE and child.block_table == parent.block_table
    assert all(engine.pool.blocks[b].ref_count == 2 for b in parent.block_table)
    check_accounting(engine)
    base = history + out.token_ids
    outs = engine.generate([base + [1, 2], base + [3]], GREEDY, episode_ids=["parent", "child"])
    assert [o.token_ids for o in outs] == [reference(base + [1, 2], 6), reference(base + [3], 6)]
    assert engine.runner.num_copies == 1 and outs[1].num_cached_tokens == 14
    assert parent.block_table[:3] == child.block_table[:3]  # full blocks still shared
    assert parent.block_table[3] != child.block_table[3]
    engine.close("parent")
    engine.close("child")
    assert engine.pool.num_free_blocks == 32
    check_accounting(engine)


def test_bad_requests_fail_alone() -> None:
    engine = fake_engine(num_blocks=8, max_positions=40)
    good = prompt(6)
    [first] = engine.generate([good], GREEDY, episode_ids=["busy"])
    busy_prompt = good + first.token_ids
    ids = [
        engine.add_request(good, GREEDY),
        engine.add_request([], GREEDY),
        engine.add_request(prompt(40), GREEDY),  # no room in the 40-position window
        engine.add_request(prompt(20), SamplingParams(max_new_tokens=15)),  # 9 blocks > 8
        engine.add_request(good, SamplingParams(stop=("x",))),  # stop strings, no decode
        engine.add_request(busy_prompt, GREEDY, episode_id="busy"),
        engine.add_request(busy_prompt, GREEDY, episode_id="busy"),  # second one in flight
    ]
    outputs = run(engine, ids)
    ok, empty, window, budget, stop, busy, twice = (outputs[i] for i in ids)
    assert ok.token_ids == reference(good, 6) and busy.token_ids == reference(busy_prompt, 6)
    assert "empty" in empty.error
    assert "context window holds 40 positions" in window.error
    assert "needs 9 KV blocks" in budget.error and "pool has 8" in budget.error
    assert "decode" in stop.error
    assert "already has a request in flight" in twice.error
    assert all(o.finish_reason == "error" and o.token_ids == [] for o in (empty, window, budget))
    assert engine.stats.num_errors == 5
    with pytest.raises(KeyError, match="unknown episode 'nope'"):
        engine.close("nope")
    with pytest.raises(KeyError):
        engine.fork("nope", "x")
    with pytest.raises(ValueError, match="already exists"):
        engine.fork("busy", "busy")


def test_out_of_vocabulary_token_fails_alone(qwen3_dir) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(qwen3_dir).eval()
    engine = PagedEngine(model, num_blocks=16)
    vocab = model.config.vocab_size
    outs = engine.generate([[1, 2, vocab], [1, 2, 3]], SamplingParams(max_new_tokens=2))
    assert "outside the vocabulary" in outs[0].error and len(outs[1].token_ids) == 2


def test_close_in_flight_and_fork_in_flight() -> None:
    engine = fake_engine(num_blocks=16)
    a = engine.add_request(prompt(5), GREEDY, episode_id="a")
    b = engine.add_request(prompt(5, seed=1), GREEDY, episode_id="b")
    engine.step()
    with pytest.raises(RuntimeError, match="in flight"):
        engine.fork("a", "c")
    engine.close("a")  # RUNNING -> FINISHED
    outputs = run(engine, [a, b])
    assert "closed" in outputs[a].error and outputs[a].finish_reason == "error"
    assert outputs[b].token_ids == reference(prompt(5, seed=1), 6)
    waiting = engine.add_request(prompt(5, seed=2), GREEDY, episode_id="w")
    engine.close("w")  # WAITING -> FINISHED
    assert "closed" in run(engine, [waiting])[waiting].error
    engine.close("b")
    assert engine.pool.num_free_blocks == 16 and not engine.episodes
    check_accounting(engine)


def test_stops_logprobs_and_context_limit() -> None:
    engine = fake_engine(
        num_blocks=64, max_positions=20, decode=lambda ids: " ".join(map(str, ids))
    )
    p = prompt(7, seed=11)
    free = reference(p, 13)
    stop_id = free[3]
    first_stop = free.index(stop_id)
    engine.stop_token_ids = frozenset({stop_id})
    [out] = engine.generate([p], SamplingParams(max_new_tokens=13, logprobs=True))
    assert out.token_ids == free[: first_stop + 1] and out.finish_reason == "stop"
    assert out.logprobs is not None and len(out.logprobs) == len(out.token_ids)
    assert all(-1e-3 < lp <= 0 for lp in out.logprobs)  # the toy model is near certain
    engine.stop_token_ids = frozenset()
    [limited] = engine.generate([p], SamplingParams(max_new_tokens=50))
    assert limited.token_ids == reference(p, 13) and limited.finish_reason == "length"
    text = " ".join(map(str, free[:5]))[-3:]
    [stopped] = engine.generate([p], SamplingParams(max_new_tokens=13, stop=(text,)))
    assert stopped.finish_reason == "stop" and text in " ".join(map(str, stopped.token_ids))
    assert len(stopped.token_ids) <= 5


def test_reset_prefix_cache_drops_pinned_and_cached_kv() -> None:
    engine = fake_engine(num_blocks=16)
    p = prompt(9)
    [out] = engine.generate([p], GREEDY, episode_ids=["e"])
    engine.reset_prefix_cache("v2")
    assert engine.episodes["e"].status is S.PREEMPTED and engine.pool.num_cached_blocks == 0
    [again] = engine.generate([p + out.token_ids], GREEDY, episode_ids=["e"])
    assert again.num_cached_tokens == 0 and again.token_ids == reference(p + out.token_ids, 6)
    engine.add_request(p, GREEDY)
    with pytest.raises(RuntimeError):
        engine.reset_prefix_cache("v3")


def test_engine_loop_joins_running_batch_and_survives_failures() -> None:
    engine = fake_engine(num_blocks=64)
    loop = EngineLoop(engine)
    runner: FakeRunner = engine.runner
    late: list = []
    joined = threading.Event()

    def inject(items) -> None:  # while the first request decodes, a second caller submits
        if len(runner.batches) == 2 and not late:
            late.append(loop.submit(prompt(4, seed=1), GREEDY, episode_id="late"))
        if len(items) == 2:
            joined.set()

    runner.on_forward = inject
    first = loop.submit(prompt(4), SamplingParams(max_new_tokens=10), episode_id="first")
    thread = loop._thread
    # not a daemon: the interpreter joins it at exit instead of killing it mid-deallocation
    assert thread is None or not thread.daemon
    assert first.result(timeout=30).token_ids == reference(prompt(4), 10)
    assert late[0].result(timeout=30).token_ids == reference(prompt(4, seed=1), 6)
    assert joined.is_set()  # the late request ran in the same forward passes as the first

    def explode(items) -> None:
        raise RuntimeError("device lost")

    runner.on_forward = explode
    failed = loop.submit(prompt(4), GREEDY, episode_id="first")
    assert "device lost" in failed.result(timeout=30).error
    assert engine.episodes["first"].status is S.PREEMPTED
    runner.on_forward = None
    history = prompt(4) + reference(prompt(4), 10)
    assert loop.generate([history], GREEDY, episode_ids=["first"])[0].token_ids == reference(
        history, 6
    )
    loop.fork("late", "late2").result(timeout=30)
    with pytest.raises(KeyError):
        loop.close_episode("missing").result(timeout=30)
    for e in ("first", "late", "late2"):
        loop.close_episode(e).result(timeout=30)
    assert loop.stats().num_used_blocks == 0 and engine.pool.num_free_blocks == 64
