"""``report_to`` trackers with the real TensorBoard package: the events hold the logged metrics.

The ``rl`` stage's tracker test is in ``test_trainers_rl.py`` (it needs the toy reward there).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from agentworld.trainers.world_model.cpt import CptTrainer
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def scalars(out: Path, tag: str) -> dict[int, float]:
    """``{step: value}`` of scalar ``tag`` in the TensorBoard run(s) under ``out/runs``."""
    found: dict[int, float] = {}
    for events in (out / "runs").rglob("events.out.tfevents.*"):
        acc = EventAccumulator(str(events.parent))
        acc.Reload()
        if tag in acc.Tags()["scalars"]:
            found |= {e.step: e.value for e in acc.Scalars(tag)}
    return found


def log(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]


def test_cpt_sends_every_log_record_to_tensorboard(corpus, tokenizer_dir, tmp_path):
    out = tmp_path / "cpt"
    CptTrainer().train(corpus, {
        "model": "tiny-test", "tokenizer": str(tokenizer_dir), "output_dir": str(out),
        "batch_size": 4, "max_seq_len": 128, "max_steps": 4, "log_every": 1,
        "report_to": "tensorboard",
    })
    records = log(out)
    loss = scalars(out, "loss")
    assert sorted(loss) == [r["step"] for r in records] == [1, 2, 3, 4]
    for r in records:
        assert loss[r["step"]] == pytest.approx(r["loss"], rel=1e-6)
    assert scalars(out, "tokens_per_s").keys() == loss.keys()


def test_unknown_or_missing_trackers_fail_before_training(corpus, tokenizer_dir, tmp_path):
    base = {"model": "tiny-test", "tokenizer": str(tokenizer_dir), "max_steps": 1}
    with pytest.raises(ValueError, match=r"tensorbored.*valid tracker names: .*tensorboard"):
        CptTrainer().train(corpus, {**base, "output_dir": str(tmp_path / "a"),
                                    "report_to": ["tensorbored"]})
    assert not (tmp_path / "a").exists()
    if importlib.util.find_spec("wandb") is None:
        with pytest.raises(ValueError, match=r"'wandb'.*not installed"):
            CptTrainer().train(corpus, {**base, "output_dir": str(tmp_path / "b"),
                                        "report_to": ["wandb"]})
        assert not (tmp_path / "b").exists()
