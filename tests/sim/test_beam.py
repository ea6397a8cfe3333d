"""Beam search: exact on short continuations, equal to transformers' beam search, greedy at 1
beam, stop strings of any tokenizer."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch
from agentworld.core.formats import OBS_CLOSE
from agentworld.sim.backends.hf import HFBackend, HFWorldModel
from agentworld.sim.beam import BeamSearchEngine
from agentworld.sim.generation import StaticBatchEngine
from agentworld.sim.sampling import SamplingParams
from test_sim_hf import requests
from transformers import Qwen3Config, Qwen3ForCausalLM

VOCAB = 12
STOP = (0, 1)


def tiny_model(seed: int) -> Qwen3ForCausalLM:
    """A random 12-token Qwen3 whose next-token distributions are far from one-hot."""
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=128,
        initializer_range=0.3, pad_token_id=0, eos_token_id=0,
    )
    return Qwen3ForCausalLM(config).eval()


def prompts(seed: int, n: int = 8) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(2, VOCAB, (3 + i % 4,), generator=g).tolist() for i in range(n)]


@torch.inference_mode()
def sequence_logprob(model: Qwen3ForCausalLM, prompt: list[int], continuation: list[int]) -> float:
    ids = torch.tensor([prompt + continuation])
    logprobs = torch.log_softmax(model(input_ids=ids).logits[0].float(), dim=-1)
    return sum(
        logprobs[len(prompt) - 1 + i, token].item() for i, token in enumerate(continuation)
    )


def test_beam_search_with_a_beam_per_token_finds_the_likeliest_two_tokens() -> None:
    model = tiny_model(0)
    greedy_engine = StaticBatchEngine(model, pad_token_id=0, batch_size=3)
    beam_engine = BeamSearchEngine(model, pad_token_id=0, num_beams=VOCAB, batch_size=3)
    params = SamplingParams(max_new_tokens=2)
    batch = prompts(0)
    beams = beam_engine.generate(batch, params)
    greedy = greedy_engine.generate(batch, params)
    greedy_suboptimal = 0
    for prompt, beam, gr in zip(batch, beams, greedy):
        scored = {
            pair: sequence_logprob(model, prompt, list(pair))
            for pair in itertools.product(range(VOCAB), repeat=2)
        }
        best = max(scored, key=scored.get)
        assert beam.token_ids == list(best) and beam.finish_reason == "length"
        greedy_suboptimal += scored[tuple(gr.token_ids)] < scored[best] - 1e-6
    assert greedy_suboptimal > 0, "no prompt where greedy misses the best pair: the test is blind"


@pytest.mark.parametrize("seed", [1, 2])
def test_beam_search_agrees_with_transformers_generate(seed: int) -> None:
    model = tiny_model(seed)
    engine = BeamSearchEngine(model, pad_token_id=0, stop_token_ids=STOP, num_beams=3, batch_size=4)
    batch = prompts(seed)
    ours = engine.generate(batch, SamplingParams(max_new_tokens=24))
    stopped = 0
    for prompt, output in zip(batch, ours):
        reference = model.generate(
            input_ids=torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            do_sample=False, num_beams=3, length_penalty=0.0, max_new_tokens=24,
            eos_token_id=list(STOP), pad_token_id=0,
        )[0, len(prompt) :].tolist()
        assert output.token_ids == reference
        stopped += output.finish_reason == "stop"
        assert (output.finish_reason == "stop") == (output.token_ids[-1] in STOP)
    assert stopped >= len(batch) // 2  # most prompts end on a stop token, not the limit


@pytest.mark.parametrize("go_on", [5, None])
def test_beam_search_when_stops_take_every_top_candidate(go_on: int | None) -> None:
    """Every token but ``go_on`` (or every token) ends a hypothesis, so stops fill the first 2k
    candidates: the search looks further down for beams to go on with, or ends the prompt. Either
    way it returns the likeliest of all finished sequences, ``[go_on] * j + [stop]``."""
    model = tiny_model(4)
    stops = [t for t in range(VOCAB) if t != go_on]
    engine = BeamSearchEngine(model, pad_token_id=0, stop_token_ids=stops, num_beams=3)
    batch, limit = prompts(4, n=4), 4
    for prompt, output in zip(batch, engine.generate(batch, SamplingParams(max_new_tokens=limit))):
        runs = range(limit) if go_on is not None else range(1)
        scored = {
            (*[go_on] * j, stop): sequence_logprob(model, prompt, [*[go_on] * j, stop])
            for j in runs
            for stop in stops
        }
        if go_on is not None:
            scored[(go_on,) * limit] = sequence_logprob(model, prompt, [go_on] * limit)
        assert tuple(output.token_ids) == max(scored, key=scored.get)
        assert output.finish_reason == ("stop" if output.token_ids[-1] in stops else "length")


def test_one_beam_is_greedy_decoding() -> None:
    model = tiny_model(3)
    batch = prompts(3)
    params = SamplingParams(max_new_tokens=10)
    greedy = StaticBatchEngine(model, pad_token_id=0, stop_token_ids=STOP).generate(batch, params)
    beam = BeamSearchEngine(model, pad_token_id=0, stop_token_ids=STOP, num_beams=1).generate(
        batch, params
    )
    assert [o.token_ids for o in beam] == [o.token_ids for o in greedy]


def test_bad_requests_are_refused() -> None:
    engine = BeamSearchEngine(tiny_model(0), pad_token_id=0)
    with pytest.raises(ValueError, match="does not sample"):
        engine.generate([[2, 3]], SamplingParams(temperature=0.7))
    with pytest.raises(ValueError, match="decode"):
        engine.generate([[2, 3]], SamplingParams(stop=("</x>",)))
    with pytest.raises(ValueError, match="num_beams"):
        BeamSearchEngine(tiny_model(0), pad_token_id=0, num_beams=0)


def test_world_model_with_beams_answers_and_refuses_sampling(
    trained_dir: Path, qwen3_dir: Path
) -> None:
    wm = HFBackend().load(str(trained_dir), max_new_tokens=40, num_beams=3)
    assert isinstance(wm.engine, BeamSearchEngine)
    for p in wm.predict(requests(3)):
        assert p.observation == "hello.txt" and p.text.endswith(OBS_CLOSE)
    with pytest.raises(ValueError, match="temperature 0"):
        HFWorldModel.from_pretrained(str(qwen3_dir), num_beams=2, temperature=0.5)
    with pytest.raises(ValueError, match="'beam' engine"):
        HFWorldModel.from_pretrained(str(qwen3_dir), num_beams=2, engine="static")
