"""Next-token sampling: per-row parameters, per-request seeds, raw log-probabilities."""

from __future__ import annotations

import math

import pytest
import torch

from agentworld.sim.sampling import (
    SamplingParams,
    filtered_probs,
    make_generator,
    sample,
    sample_rows,
)

TOY = torch.tensor([0.5, 0.3, 0.15, 0.05])  # a toy next-token distribution


def random_logits(n: int = 8, vocab: int = 50, seed: int = 0) -> torch.Tensor:
    return 3 * torch.randn(n, vocab, generator=torch.Generator().manual_seed(seed))


def one(value: float, dtype=torch.float32) -> torch.Tensor:
    return torch.tensor([value], dtype=dtype)


def test_greedy_top_k_1_and_tiny_top_p_take_the_argmax() -> None:
    logits = random_logits()
    argmax = logits.argmax(-1)
    for params in (
        SamplingParams(),
        SamplingParams(temperature=1.5, top_k=1),
        SamplingParams(temperature=1.5, top_p=1e-6),
    ):
        tokens, _ = sample_rows(logits, [params] * 8, [None] * 8)
        assert torch.equal(tokens, argmax)
        assert torch.equal(sample(logits, params), argmax)


def test_filtered_probs_exact_values() -> None:
    logits = TOY.log()[None]
    p = filtered_probs(logits, one(1.0), one(0, torch.long), one(1.0))[0]
    torch.testing.assert_close(p, TOY)
    hot = filtered_probs(logits, one(2.0), one(0, torch.long), one(1.0))[0]
    torch.testing.assert_close(hot, TOY.sqrt() / TOY.sqrt().sum())  # softmax(log p / 2)
    top2 = filtered_probs(logits, one(1.0), one(2, torch.long), one(1.0))[0]
    torch.testing.assert_close(top2, torch.tensor([0.625, 0.375, 0.0, 0.0]))
    # top_p = 0.7: mass before the 3rd token is 0.8 >= 0.7, so it and the 4th go.
    nucleus = filtered_probs(logits, one(1.0), one(0, torch.long), one(0.7))[0]
    torch.testing.assert_close(nucleus, torch.tensor([0.625, 0.375, 0.0, 0.0]))
    # top_p = 0.85 keeps three tokens.
    nucleus = filtered_probs(logits, one(1.0), one(0, torch.long), one(0.85))[0]
    torch.testing.assert_close(nucleus, torch.tensor([0.5, 0.3, 0.15, 0.0]) / 0.95)


def test_temperature_sampling_frequencies_match_softmax() -> None:
    n = 4000
    logits = TOY.log().expand(n, 4)
    for temperature, top_k in ((1.0, 0), (2.0, 0), (1.0, 2)):
        params = [SamplingParams(temperature=temperature, top_k=top_k, seed=i) for i in range(n)]
        tokens, _ = sample_rows(logits, params, [make_generator(p) for p in params])
        freq = torch.bincount(tokens, minlength=4) / n
        expected = filtered_probs(
            logits[:1], one(temperature), one(top_k, torch.long), one(1.0)
        )[0]
        # 4 standard errors of a frequency estimated from 4000 draws: sqrt(0.25 / 4000) ~ 0.008
        assert (freq - expected).abs().max() < 0.032, (temperature, top_k, freq, expected)


def test_seed_gives_the_same_tokens_whatever_the_batch() -> None:
    logits = random_logits(n=6, vocab=50, seed=1)
    mine = SamplingParams(temperature=1.0, top_p=0.95, seed=123)
    others = [
        SamplingParams(temperature=0.8, seed=7),
        SamplingParams(),
        SamplingParams(temperature=1),
    ]

    def draws(row: int, neighbours: list[SamplingParams], steps: int = 20) -> list[int]:
        params = neighbours[:row] + [mine] + neighbours[row:]
        generators = [make_generator(p) for p in params]
        batch = logits[: len(params)].clone()
        batch[row] = logits[5]  # my row always sees the same logits
        out = []
        for _ in range(steps):
            tokens, _ = sample_rows(batch, params, generators)
            out.append(int(tokens[row]))
        return out

    alone = draws(0, [])
    assert draws(2, others) == alone
    assert draws(1, others[::-1]) == alone
    assert len(set(alone)) > 1  # really sampled, not greedy
    other_seed = SamplingParams(temperature=1.0, top_p=0.95, seed=124)
    generator = make_generator(other_seed)
    redrawn = [int(sample_rows(logits[5:6], [other_seed], [generator])[0][0]) for _ in range(20)]
    assert redrawn != alone


def test_logprobs_are_raw_log_softmax_at_sampled_ids() -> None:
    logits = random_logits(n=5, vocab=40, seed=2)
    params = [
        SamplingParams(),
        SamplingParams(temperature=0.5, seed=1),
        SamplingParams(temperature=1.3, top_k=5, seed=2),
        SamplingParams(temperature=1.0, top_p=0.5),
        SamplingParams(temperature=2.0, top_k=3, top_p=0.9, seed=3),
    ]
    tokens, logprobs = sample_rows(logits, params, [make_generator(p) for p in params])
    assert tokens.dtype == torch.long and logprobs.dtype == torch.float32
    expected = torch.log_softmax(logits, -1)[torch.arange(5), tokens]
    torch.testing.assert_close(logprobs, expected)
    assert tokens[0] == logits[0].argmax()
    assert (logprobs < 0).all() and math.isfinite(float(logprobs.sum()))
    # top-k rows only ever pick among their k best tokens
    assert tokens[2] in logits[2].topk(5).indices and tokens[4] in logits[4].topk(3).indices


def test_sample_keeps_its_old_contract() -> None:
    """``sample`` (one params, one shared generator) as used by ``StaticBatchEngine``."""
    logits = random_logits(n=4, vocab=30, seed=3)
    params = SamplingParams(16, 0.9, 0.8)  # positional: max_new_tokens, temperature, top_p
    a = sample(logits, params, torch.Generator().manual_seed(5))
    b = sample(logits, params, torch.Generator().manual_seed(5))
    assert a.shape == (4,) and a.dtype == torch.long and torch.equal(a, b)
    probs = filtered_probs(
        logits, torch.full((4,), 0.9), torch.zeros(4, dtype=torch.long), torch.full((4,), 0.8)
    )
    assert (probs[torch.arange(4), a] > 0).all()


def test_params_validation() -> None:
    assert SamplingParams(stop=["</obs>"]).stop == ("</obs>",)
    with pytest.raises(ValueError, match="top_k"):
        SamplingParams(top_k=-1)
    with pytest.raises(ValueError, match="stop"):
        SamplingParams(stop="</obs>")
    with pytest.raises(ValueError, match="stop"):
        SamplingParams(stop=("",))
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0)
    with pytest.raises(ValueError, match="one params"):
        sample_rows(random_logits(n=2), [SamplingParams()], [None])
    assert make_generator(SamplingParams()) is None
