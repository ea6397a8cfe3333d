"""fp32 CPU greedy outputs of the paged engine equal ``model.generate`` token for token,
on tiny random Qwen3 and Llama models: batch sizes 1 and 32, with and without prefix
hits, multi-step pinned episodes, after eviction and recompute, and after a fork."""

from __future__ import annotations

import random

import pytest
import torch
from tiny_lm import tiny_lm

from agentworld.sim.engine import PagedEngine
from agentworld.sim.sampling import SamplingParams

VOCAB = 256
EOS = 3  # a stop token: some continuations end early, exercising stops too
NEW = 10
GREEDY = SamplingParams(max_new_tokens=NEW)


def build(arch: str) -> torch.nn.Module:
    return tiny_lm(arch, VOCAB, 512, eos_token_id=EOS, pad_token_id=0)


class Reference:
    """``model.generate`` greedy continuations, memoised (computed on a private copy of the
    model so the engine's attention switch cannot touch the reference)."""

    def __init__(self, arch: str):
        self.model = build(arch)
        self.cache: dict[tuple[int, ...], list[int]] = {}

    @torch.inference_mode()
    def __call__(self, prompt: list[int], n: int = NEW) -> list[int]:
        key = (*prompt, -n)
        if key not in self.cache:
            out = self.model.generate(
                input_ids=torch.tensor([prompt]),
                attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                max_new_tokens=n,
                do_sample=False,
            )
            self.cache[key] = out[0, len(prompt) :].tolist()
        return self.cache[key]


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> object:
    """Tiny matmuls gain nothing from threads; on a shared 2-core box they lose a lot."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module", params=["qwen3", "llama"])
def arch(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def reference(arch: str) -> Reference:
    return Reference(arch)


def engine_for(arch: str, **options: object) -> PagedEngine:
    return PagedEngine(build(arch), stop_token_ids=[EOS], **options)


def tokens(rng: random.Random, n: int) -> list[int]:
    return [rng.randrange(VOCAB) for _ in range(n)]


def test_batch_of_one(arch: str, reference: Reference) -> None:
    engine = engine_for(arch, num_blocks=32)  # default block size 16
    prompt = tokens(random.Random(1), 37)
    [out] = engine.generate([prompt], GREEDY)
    assert out.token_ids == reference(prompt) and out.finish_reason == "length"
    assert engine.stats.num_computed_tokens == 37 + NEW - 1


@pytest.mark.parametrize("caching", [False, True])
def test_batch_of_32_with_and_without_prefix_hits(
    arch: str, reference: Reference, caching: bool
) -> None:
    rng = random.Random(2)
    system = tokens(rng, 24)  # shared by all: 3 full blocks of 8
    prompts = [system + tokens(rng, rng.randrange(1, 30)) for _ in range(32)]
    engine = engine_for(
        arch,
        num_blocks=256,
        block_size=8,
        max_num_batched_tokens=128,  # admission spans several steps: later prompts hit
        enable_prefix_caching=caching,
    )
    outputs = engine.generate(prompts, GREEDY)
    assert [o.token_ids for o in outputs] == [reference(p) for p in prompts]
    hits = [o.num_cached_tokens for o in outputs]
    if caching:
        assert hits[0] == 0 and sum(h == 24 for h in hits) >= 20
        assert engine.stats.num_cached_tokens == sum(hits)
    else:
        assert hits == [0] * 32 and engine.pool.num_cached_blocks == 0
    assert engine.pool.num_free_blocks == 256


def run_episodes(
    engine: PagedEngine, reference: Reference, num_episodes: int, num_steps: int, seed: int
) -> list[tuple[int, int]]:
    """Step episodes sharing a system prompt; each step's prompt is the full history plus
    template-like tokens and an action. Checks every output against ``model.generate``.

    Returns:
        Per request ``(num_cached_tokens, length of the history before it)``.
    """
    rng = random.Random(seed)
    system = tokens(rng, 20)
    histories = {f"ep{i}": system + tokens(rng, 6) for i in range(num_episodes)}
    cached = []
    for _ in range(num_steps):
        ids = list(histories)
        prompts = [histories[e] + [1, 2] + tokens(rng, rng.randrange(1, 6)) for e in ids]
        outputs = engine.generate(prompts, GREEDY, episode_ids=ids)
        for e, prompt, out in zip(ids, prompts, outputs):
            assert out.error is None and out.token_ids == reference(prompt)
            cached.append((out.num_cached_tokens, len(histories[e])))
            histories[e] = prompt + out.token_ids
    return cached


def test_pinned_episodes_prefill_only_new_tokens(arch: str, reference: Reference) -> None:
    engine = engine_for(arch, num_blocks=128, block_size=8)
    cached = run_episodes(engine, reference, num_episodes=4, num_steps=3, seed=3)
    # from step 2 on, all the history but its last sampled token was pinned
    assert [c for c, _ in cached[4:]] == [history - 1 for _, history in cached[4:]]
    assert engine.stats.num_preemptions == 0
    for e in list(engine.episodes):
        engine.close(e)
    assert engine.pool.num_free_blocks == 128


def test_eviction_and_recompute(arch: str, reference: Reference) -> None:
    # 8 episodes of up to ~90 tokens (12 blocks of 8 each) cannot all stay pinned in 40 blocks
    engine = engine_for(arch, num_blocks=40, block_size=8, max_num_batched_tokens=64)
    run_episodes(engine, reference, num_episodes=8, num_steps=4, seed=4)
    stats = engine.stats
    assert stats.num_preemptions > 0 and stats.num_evictions > 0
    for e in list(engine.episodes):
        engine.close(e)
    assert engine.pool.num_free_blocks == 40


def test_fork_then_diverge(arch: str, reference: Reference) -> None:
    engine = engine_for(arch, num_blocks=64, block_size=8)
    rng = random.Random(5)
    prompt = tokens(rng, 21)
    [out] = engine.generate([prompt], GREEDY, episode_ids=["root"])
    history = prompt + out.token_ids
    for child in ("a", "b", "c"):
        engine.fork("root", child)
    ids = ["root", "a", "b", "c"]
    prompts = [history + tokens(rng, 1 + i) for i in range(4)]
    outputs = engine.generate(prompts, GREEDY, episode_ids=ids)
    assert [o.token_ids for o in outputs] == [reference(p) for p in prompts]
    assert [o.num_cached_tokens for o in outputs] == [len(history) - 1] * 4
    for e in ids:
        engine.close(e)
    assert engine.pool.num_free_blocks == 64
