"""The ``vllm`` backend: what runs everywhere (registration, the missing-extra error, parameter
mapping, prompt rendering equal to the ``hf`` backend's) and, on a CUDA machine with vLLM,
greedy predictions equal to the ``hf`` backend's with one request id per episode."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer

from agentworld.core import plugins
from agentworld.core.formats import OBS_CLOSE
from agentworld.sim.backends.hf import HFBackend
from agentworld.sim.backends.vllm import EXTRA, render_chat, sampling_kwargs, stop_token_ids

HAS_VLLM = importlib.util.find_spec("vllm") is not None
MESSAGES = [
    {"role": "system", "content": "You simulate a Linux terminal.\n\nInitial observation:\n$ "},
    {"role": "user", "content": "ls"},
    {"role": "assistant", "content": "<predicted_observation>\na.txt\n</predicted_observation>"},
    {"role": "user", "content": "cat a.txt"},
]


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed: the missing-extra error cannot occur")
def test_missing_vllm_names_the_extra(qwen3_dir: Path) -> None:
    backend = plugins.get_sim_backend("vllm")
    with pytest.raises(ImportError, match=r"agentworld-sim\[vllm\]"):
        backend.load(str(qwen3_dir))
    assert EXTRA == "agentworld-sim[vllm]"


def test_sampling_kwargs_map_our_options() -> None:
    greedy = sampling_kwargs(
        max_tokens=64, stop=[OBS_CLOSE], stop_token_ids=[2, 1], include_stop=True
    )
    assert greedy == {
        "n": 1,
        "max_tokens": 64,
        "temperature": 0.0,
        "top_p": 1.0,
        "stop": [OBS_CLOSE],
        "stop_token_ids": [2, 1],
        "include_stop_str_in_output": True,
        "skip_special_tokens": True,
    }
    sampled = sampling_kwargs(
        max_tokens=8, temperature=0.7, top_p=0.9, top_k=40, seed=11, logprobs=True
    )
    assert (sampled["temperature"], sampled["top_p"], sampled["top_k"]) == (0.7, 0.9, 40)
    assert (sampled["seed"], sampled["logprobs"], sampled["stop"]) == (11, 0, [])
    assert "top_k" not in sampling_kwargs(max_tokens=8, top_k=-1)


def test_prompt_and_stop_ids_match_the_hf_backend(qwen3_dir: Path) -> None:
    wm = HFBackend().load(str(qwen3_dir))
    tokenizer = AutoTokenizer.from_pretrained(str(qwen3_dir))
    assert render_chat(tokenizer, MESSAGES) == wm.render(MESSAGES)
    eos = wm.model.generation_config.eos_token_id
    assert stop_token_ids(tokenizer, eos) == sorted(wm.stop_ids)
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") in stop_token_ids(tokenizer)


@pytest.mark.skipif(
    not HAS_VLLM or not torch.cuda.is_available(),
    reason="needs vLLM (pip install 'agentworld-sim[vllm]') and a CUDA GPU",
)
def test_vllm_greedy_equals_hf_and_reuses_episode_ids(trained_dir: Path) -> None:
    from agentworld.sim.backends.vllm import VLLMWorldModel

    requests = [MESSAGES, MESSAGES[:2]]
    reference = HFBackend().load(
        str(trained_dir), device="cuda", dtype="float32", max_new_tokens=40
    )
    wm = VLLMWorldModel(
        str(trained_dir),
        dtype="float32",
        max_new_tokens=40,
        gpu_memory_utilization=0.3,
        max_model_len=512,
        enforce_eager=True,
    )
    for _ in range(2):  # the same episode ids twice: one request id per episode, reused per step
        predictions = wm.predict(requests, episode_ids=["episode-a", "episode-b"])
        assert [p.observation for p in predictions] == ["hello.txt", "hello.txt"]
        assert [p.text for p in predictions] == [p.text for p in reference.predict(requests)]
