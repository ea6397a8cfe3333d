"""The ``hf`` backend on tiny local checkpoints: loading, batching correctness, stops, sampling."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from agentworld.core import plugins
from agentworld.core.formats import OBS_CLOSE
from agentworld.sim.backends.hf import HFBackend, HFWorldModel, load_causal_lm
from agentworld.sim.generation import StaticBatchEngine
from agentworld.sim.sampling import SamplingParams
from chatml import chat_requests
from transformers.utils import logging as hf_logging

SYSTEM = {
    "role": "system",
    "content": "You simulate a Linux terminal.\n\nInitial observation:\nuser@host:~$ ",
}


def requests(n: int) -> list[list[dict[str, str]]]:
    """``n`` requests with histories of different lengths (so the batch needs padding)."""
    return chat_requests(SYSTEM, n)


def reference_generate(wm: HFWorldModel, prompt: list[int], max_new_tokens: int) -> list[int]:
    """``model.generate`` greedy continuation, cut after the first stop token."""
    out = wm.model.generate(
        input_ids=torch.tensor([prompt]),
        attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
        max_new_tokens=max_new_tokens,
        do_sample=False,
        eos_token_id=sorted(wm.stop_ids),
        pad_token_id=wm.tokenizer.pad_token_id,
    )[0, len(prompt) :].tolist()
    for i, token in enumerate(out):
        if token in wm.stop_ids:
            return out[: i + 1]
    return out


def test_plugin_registers_hf_and_loads(qwen3_dir: Path) -> None:
    backend = plugins.get_sim_backend("hf")
    wm = backend.load(str(qwen3_dir), max_new_tokens=8)
    assert isinstance(wm, HFWorldModel)
    assert wm.model.device.type == "cpu" and wm.model.dtype == torch.float32
    [prediction] = wm.predict([requests(1)[0]])
    assert 1 <= prediction.num_tokens <= 8


def test_local_checkpoint_loads_without_a_weight_loading_bar(qwen3_dir: Path, capfd) -> None:
    assert hf_logging.is_progress_bar_enabled()
    model = load_causal_lm(str(qwen3_dir))
    assert model.get_input_embeddings().num_embeddings > 0
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled()  # switched back on for hub downloads


def test_missing_local_path_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        HFBackend().load(str(tmp_path / "nope"))


@pytest.mark.parametrize("checkpoint", ["qwen3_dir", "llama_dir", "gemma3_dir"])
def test_batched_equals_unbatched_and_generate(
    checkpoint: str, request: pytest.FixtureRequest
) -> None:
    wm = HFBackend().load(str(request.getfixturevalue(checkpoint)), batch_size=4, max_new_tokens=24)
    batch = requests(7)
    together = wm.predict(batch)
    alone = [wm.predict([r])[0] for r in batch]
    assert [p.text for p in together] == [p.text for p in alone]
    assert [p.num_tokens for p in together] == [p.num_tokens for p in alone]

    prompts = [wm.encode(r) for r in batch]
    params = SamplingParams(max_new_tokens=24)
    batched_ids = [o.token_ids for o in wm.engine.generate(prompts, params)]
    for prompt, ids in zip(prompts, batched_ids):
        assert ids == wm.engine.generate([prompt], params)[0].token_ids
    for prompt, ids in zip(prompts[:3], batched_ids):
        assert ids == reference_generate(wm, prompt, 24)


def test_sliding_window_models_are_served_by_the_static_engine(gemma3_dir: Path) -> None:
    # paged attention has no window: auto picks the static engine, paged is refused by name
    wm = HFBackend().load(str(gemma3_dir), max_new_tokens=8)
    assert isinstance(wm.engine, StaticBatchEngine)
    refusal = "'sliding_attention' in 1 of 2 layers; use engine='static'"
    with pytest.raises(ValueError, match=refusal):
        HFBackend().load(str(gemma3_dir), engine="paged")
    request = requests(3)[2]
    prompt = wm.encode(request)
    assert len(prompt) > 16  # longer than the window, so the window changes the answer
    [prediction] = wm.predict([request])
    assert prediction.text == wm.tokenizer.decode(reference_generate(wm, prompt, 8))


def test_stop_string_ends_generation(qwen3_dir: Path) -> None:
    wm = HFBackend().load(str(qwen3_dir))
    prompt = wm.encode(requests(1)[0])
    free = wm.engine.generate([prompt], SamplingParams(max_new_tokens=20))[0].token_ids
    decode = wm.tokenizer.decode
    stop = decode(free[:12])[-4:]  # text completed by one of the first 12 tokens
    first = next(i for i in range(1, len(free) + 1) if stop in decode(free[:i]))
    engine = StaticBatchEngine(wm.model, pad_token_id=0, stop_strings=[stop], decode=decode)
    out = engine.generate([prompt], SamplingParams(max_new_tokens=20))[0]
    assert out.finish_reason == "stop" and out.token_ids == free[:first]


def test_greedy_sampling_limits_and_seed(qwen3_dir: Path) -> None:
    greedy = HFBackend().load(str(qwen3_dir), max_new_tokens=12).predict(requests(3))
    nucleus = HFBackend().load(
        str(qwen3_dir), max_new_tokens=12, temperature=1.0, top_p=1e-6, seed=1
    )
    assert [p.text for p in nucleus.predict(requests(3))] == [p.text for p in greedy]
    runs = [
        HFBackend()
        .load(str(qwen3_dir), max_new_tokens=12, temperature=1.5, seed=7)
        .predict(requests(3))
        for _ in range(2)
    ]
    assert [p.text for p in runs[0]] == [p.text for p in runs[1]]
    with pytest.raises(ValueError):
        SamplingParams(temperature=-1)


def test_long_history_is_fitted_keeping_system(qwen3_dir: Path) -> None:
    wm = HFBackend().load(str(qwen3_dir), max_new_tokens=16)
    history = []
    for t in range(60):
        history += [
            {"role": "user", "content": f"echo turn {t}"},
            {"role": "assistant", "content": f"turn {t} done"},
        ]
    messages = [SYSTEM, *history, {"role": "user", "content": "echo last"}]
    ids = wm.encode(messages)
    assert len(wm.render(messages)) > 512 and len(ids) <= 512 - 16
    text = wm.tokenizer.decode(ids)
    assert text.startswith("<|im_start|>system\nYou simulate") and "echo last" in text
    assert "turn 0 done" not in text and "turn 59 done" in text
    [prediction] = wm.predict([messages])
    assert prediction.num_tokens == 16


def test_trained_model_answer_is_parsed(trained_dir: Path) -> None:
    wm = HFBackend().load(str(trained_dir), max_new_tokens=40, batch_size=2)
    predictions = wm.predict(requests(3))
    for p in predictions:
        assert p.observation == "hello.txt" and p.text.endswith(OBS_CLOSE)
        assert p.num_tokens < 40


def test_transcript_format_serves_a_cpt_style_model(transcript_dir: Path) -> None:
    from agentworld.core.formats import transcript_prompt

    wm = HFWorldModel.from_pretrained(str(transcript_dir), device="cpu", prompt_format="transcript")
    batch = requests(4)
    # The prompt is the CPT transcript text, not the chat template.
    expected = wm.tokenizer(transcript_prompt(batch[1]), add_special_tokens=False)["input_ids"]
    assert wm.render(batch[1]) == expected
    assert transcript_prompt(batch[1]).endswith("\n>>> cat notes.md x\n")
    predictions = wm.predict(batch, max_new_tokens=24)
    assert [p.observation for p in predictions] == ["hello.txt"] * 4
    assert all(p.text.startswith("hello.txt\n>>> ") for p in predictions)
    # Cut before the next action line: malformed, not a silent partial observation.
    assert [p.observation for p in wm.predict(batch[:2], max_new_tokens=1)] == [None, None]
    with pytest.raises(ValueError, match="prompt_format"):
        HFWorldModel(wm.model, wm.tokenizer, prompt_format="raw")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reward footers"):
        HFWorldModel(wm.model, wm.tokenizer, prompt_format="transcript", rewards=True)


def test_domain_rationale_is_written_by_the_simulator(qwen3_dir: Path, caplog) -> None:
    """A checkpoint trained with domain rationales: the terminal domain writes the rationale
    from the action and the previous observation's prompt line, the model continues after the
    block's opening tag, and the answer holds both."""
    wm = HFBackend().load(str(qwen3_dir), max_new_tokens=8, reasoning="domain", domain="terminal")
    docs = "<predicted_observation>\nuser@sandbox:~/docs$ \n</predicted_observation>"
    cases = {  # request -> the rationale the terminal domain writes for it
        "cat ~/notes.md": [SYSTEM, {"role": "user", "content": "cat notes.md"}],
        "cat ~/docs/notes.md": [
            SYSTEM,
            {"role": "user", "content": "cd docs"},
            {"role": "assistant", "content": docs},
            {"role": "user", "content": "cat notes.md"},
        ],
        "ls ~": [
            SYSTEM,
            {"role": "user", "content": "cd docs"},
            {"role": "assistant", "content": docs},
            {"role": "user", "content": "ls -la .."},
        ],
        # A file the episode wrote: the earlier command line that wrote it follows the header.
        "cat ~/docs/a.txt\n$ echo hi > a.txt": [
            SYSTEM,
            {"role": "user", "content": "cd docs"},
            {"role": "assistant", "content": docs},
            {"role": "user", "content": "echo hi > a.txt"},
            {"role": "assistant", "content": docs},
            {"role": "user", "content": "cat a.txt"},
        ],
    }
    predictions = wm.predict(list(cases.values()))
    for (rationale, messages), prediction in zip(cases.items(), predictions):
        prefix = f"<think>{rationale}</think>\n<predicted_observation>"
        assert prediction.text.startswith(prefix)
        ids = wm.tokenizer(prefix, add_special_tokens=False)["input_ids"]
        prompt = wm.encode(wm.history_with_think(messages)) + ids
        generated = reference_generate(wm, prompt, 8)
        continuation = wm.tokenizer.decode(generated, skip_special_tokens=True)
        assert prediction.text == prefix + continuation
    plain = HFBackend().load(str(qwen3_dir), max_new_tokens=8)
    assert not plain.predict([cases["ls ~"]])[0].text.startswith("<think>ls ~</think>")
    with caplog.at_level("WARNING"):
        unknown = HFBackend().load(str(qwen3_dir), reasoning="domain", domain=None)
    assert unknown.explain_text is None and "cannot write them" in caplog.text
