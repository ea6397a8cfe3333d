"""Trainer options for CPU training: the budget clock, layer freezing, gradient checkpointing
and sequence packing (bf16 autocast: ``test_trainers_train.py``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoTokenizer

from agentworld.trainers.models.specs import load_model
from agentworld.trainers.training.data import collate, sft_samples
from agentworld.trainers.training.speed import pack
from agentworld.trainers.world_model.cpt import CptTrainer
from agentworld.trainers.world_model.sft import SftTrainer

BASE = {"model": "tiny-test", "batch_size": 2, "max_seq_len": 128, "warmup_steps": 1, "log_every": 1}


def log(out: str) -> list[dict]:
    return [json.loads(line) for line in (Path(out) / "train_log.jsonl").read_text().splitlines()]


def test_process_budget_clock_does_not_count_time_spent_waiting(corpus, tokenizer_dir, tmp_path):
    # Each step sleeps 50 ms in the callback: on the wall clock a 0.3 s budget ends within six
    # steps; on the process clock the sleeps cost nothing, so training runs on past them.
    options = {**BASE, "tokenizer": str(tokenizer_dir), "time_budget_s": 0.3, "max_steps": 400,
               "callback": lambda record: time.sleep(0.05)}
    start = time.perf_counter()
    out = CptTrainer().train(corpus, {**options, "output_dir": str(tmp_path / "p"),
                                      "budget_clock": "process"})
    wall = time.perf_counter() - start
    steps = log(out)
    assert len(steps) > 6 and 0.3 <= steps[-1]["elapsed_s"] < wall
    wall_run = log(CptTrainer().train(corpus, {**options, "output_dir": str(tmp_path / "w")}))
    assert 1 <= len(wall_run) <= 7 and wall_run[-1]["elapsed_s"] >= 0.3


@pytest.fixture(scope="module")
def start(tmp_path_factory, corpus, tokenizer_dir) -> Path:
    """A 2-step SFT checkpoint of the tiny-test preset (2 decoder layers) to continue from."""
    out = tmp_path_factory.mktemp("start") / "ckpt"
    SftTrainer().train(corpus, {**BASE, "tokenizer": str(tokenizer_dir), "output_dir": str(out),
                                "max_steps": 2})
    return out


def weights(out: Path | str) -> dict[str, torch.Tensor]:
    return load_file(str(Path(out) / "model.safetensors"))


def test_freeze_layers_trains_only_the_upper_layers(corpus, start, tmp_path):
    out = SftTrainer().train(corpus, {**BASE, "model": str(start), "output_dir": str(tmp_path / "f"),
                                      "max_steps": 3, "lr": 1e-2, "freeze_layers": 1})
    before, after = weights(start), weights(out)
    same = {k for k in before if torch.equal(before[k], after[k])}
    assert "model.embed_tokens.weight" in same
    assert all(k in same for k in before if k.startswith("model.layers.0."))
    assert not any(k in same for k in before if k.startswith("model.layers.1.") and "proj" in k)
    with pytest.raises(ValueError, match="freeze all 2 decoder layers"):
        SftTrainer().train(corpus, {**BASE, "model": str(start), "output_dir": str(tmp_path / "g"),
                                    "max_steps": 1, "freeze_layers": 2})


def test_gradient_checkpointing_gives_the_same_training(corpus, start, tmp_path):
    runs = [SftTrainer().train(corpus, {**BASE, "model": str(start), "max_steps": 3,
                                        "output_dir": str(tmp_path / str(flag)),
                                        "gradient_checkpointing": flag})
            for flag in (False, True)]
    plain, checkpointed = (log(r) for r in runs)
    assert [r["loss"] for r in checkpointed] == pytest.approx([r["loss"] for r in plain], rel=1e-4)


def test_packed_rows_give_each_sample_its_own_loss(corpus, start, tmp_path):
    model, tokenizer = load_model(str(start))
    samples = sft_samples(corpus[:6], AutoTokenizer.from_pretrained(start), 128)
    rows = pack(samples, 256)
    assert len(rows) < len(samples) and all(len(r) <= 256 for r in rows)
    assert sorted(t for r in rows for t in r.input_ids) == sorted(t for s in samples for t in s.input_ids)

    def token_losses(batch: dict[str, torch.Tensor]) -> list[float]:
        with torch.no_grad():
            logits = model(**batch, use_cache=False).logits[:, :-1]
        labels = batch["labels"][:, 1:]
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels.clamp(min=0),
                                                 reduction="none")
        return sorted(round(v, 4) for v in loss[labels != -100].tolist())

    packed = token_losses(collate(rows, tokenizer.pad_token_id))
    alone = [v for s in samples for v in token_losses(collate([s], tokenizer.pad_token_id))]
    assert packed == pytest.approx(sorted(alone), abs=2e-3)
    out = SftTrainer().train(corpus, {**BASE, "model": str(start), "max_steps": 2, "packing": True,
                                      "output_dir": str(tmp_path / "p")})
    assert log(out)[-1]["tokens"] > 2 * 2 * 128 * 0.5  # rows hold more than one sample's tokens
