"""cpt / sft training on the tiny-test preset: loss goes down, checkpoints reload, resume, seeds, LoRA."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from agentworld.core import plugins
from agentworld.trainers.world_model.cpt import CptTrainer
from agentworld.trainers.training.data import collate, sft_samples
from agentworld.trainers.training.setup import resolve_mixed_precision
from agentworld.trainers.models.specs import PRESETS, ModelSpecError, load_model
from agentworld.trainers.world_model.sft import SftTrainer

BASE = {
    "model": "tiny-test",
    "batch_size": 4,
    "max_seq_len": 128,
    "warmup_steps": 2,
    "log_every": 1,
    "lr": 3e-3,
}


def losses(out: str | Path) -> list[float]:
    lines = (Path(out) / "train_log.jsonl").read_text().splitlines()
    return [json.loads(line)["loss"] for line in lines]


def sft8(corpus, tokenizer_dir, out: Path, **extra) -> str:
    """An 8-step SFT run from a preset, seed 7, into ``out``; ``extra`` overrides options."""
    options = {**BASE, "tokenizer": str(tokenizer_dir), "output_dir": str(out), "max_steps": 8}
    return SftTrainer().train(corpus, {**options, "seed": 7, **extra})


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory, corpus, tokenizer_dir) -> Path:
    """An uninterrupted 8-step SFT run from a preset, seed 7."""
    out = tmp_path_factory.mktemp("sft") / "run"
    sft8(corpus, tokenizer_dir, out)
    return out


def test_plugin_registers_cpt_and_sft():
    assert {"cpt", "sft"} <= set(plugins.names("trainer"))
    assert plugins.get_trainer("cpt").name == "cpt" and plugins.get_trainer("sft").name == "sft"


def test_cpt_lowers_loss_and_checkpoint_reloads_with_identical_logits(corpus, tmp_path):
    out = CptTrainer().train(
        corpus,
        {
            **BASE,
            "tokenizer": "train",
            "vocab_size": 400,
            "output_dir": str(tmp_path / "cpt"),
            "max_steps": 30,
            "save_every": 15,
        },
    )
    curve = losses(out)
    assert len(curve) == 30 and sum(curve[-5:]) / 5 < curve[0] - 0.5
    record = json.loads((Path(out) / "train_log.jsonl").read_text().splitlines()[-1])
    assert record["tokens"] > 0 and record["tokens_per_s"] > 0 and record["elapsed_s"] > 0
    model = AutoModelForCausalLM.from_pretrained(out)
    tok = AutoTokenizer.from_pretrained(out)
    assert model.config.model_type == "qwen3" and model.config.vocab_size == len(tok)
    # The in-memory state of the last step equals what was exported.
    state = torch.load(Path(out) / "trainer_state" / "pytorch_model.bin", weights_only=True)
    trained = AutoModelForCausalLM.from_config(model.config)
    trained.load_state_dict(state, strict=False)
    trained.tie_weights()
    ids = tok("echo hi\nhi\n", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert torch.equal(model(ids).logits, trained(ids).logits)
    reloaded, _ = load_model(out)
    with torch.no_grad():
        assert torch.equal(model(ids).logits, reloaded(ids).logits)


def test_same_seed_same_loss_curve(sft_run, corpus, tokenizer_dir, tmp_path):
    out = sft8(corpus, tokenizer_dir, tmp_path / "b")
    assert losses(out) == losses(sft_run)
    assert losses(sft_run)[-1] < losses(sft_run)[0]


def test_mixed_precision_auto_follows_native_bf16(
    sft_run, corpus, tokenizer_dir, tmp_path, monkeypatch
):
    native = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    expected = "bf16" if native and not torch.cuda.is_available() else None
    if not torch.cuda.is_available():
        assert resolve_mixed_precision("auto") == ("bf16" if native else "no")
    assert resolve_mixed_precision("no") == "no" and resolve_mixed_precision(None) is None
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    if not torch.cuda.is_available():
        assert resolve_mixed_precision("auto") == "no"
    monkeypatch.undo()
    out = sft8(corpus, tokenizer_dir, tmp_path / "auto", mixed_precision="auto")
    curve, fp32 = losses(out), losses(sft_run)  # sft_run: the same run in fp32
    assert curve[-1] < curve[0]
    assert AutoModelForCausalLM.from_pretrained(out).dtype == torch.float32  # fp32 master weights
    if expected == "bf16":  # bf16 matmuls: a close but not identical curve
        assert curve != fp32 and abs(curve[-1] - fp32[-1]) < 0.1 * fp32[-1]
    elif not torch.cuda.is_available():
        assert curve == fp32


class Crash(RuntimeError):
    pass


def test_resume_continues_the_uninterrupted_loss_curve(sft_run, corpus, tokenizer_dir, tmp_path):
    cfg = {
        **BASE,
        "tokenizer": str(tokenizer_dir),
        "output_dir": str(tmp_path / "r"),
        "max_steps": 8,
        "seed": 7,
        "save_every": 4,
    }

    def crash_at_6(record: dict) -> None:
        if record["step"] == 6:
            raise Crash

    with pytest.raises(Crash):
        SftTrainer().train(corpus, {**cfg, "callback": crash_at_6})
    assert len(losses(tmp_path / "r")) == 6
    steps = []
    SftTrainer().train(
        corpus, {**cfg, "resume": True, "callback": lambda r: steps.append(r["step"])}
    )
    assert steps == [5, 6, 7, 8]
    assert losses(tmp_path / "r") == pytest.approx(losses(sft_run), rel=1e-6)


def test_lora_trains_and_saves_a_merged_loadable_model(sft_run, corpus, tmp_path):
    out = SftTrainer().train(
        corpus,
        {
            **BASE,
            "model": str(sft_run),
            "output_dir": str(tmp_path / "lora"),
            "max_steps": 10,
            "lr": 2e-2,
            "lora": {"r": 4, "alpha": 8},
        },
    )
    assert (Path(out) / "adapter" / "adapter_config.json").is_file()
    merged = AutoModelForCausalLM.from_pretrained(out)
    base = AutoModelForCausalLM.from_pretrained(sft_run)
    assert not any("lora" in name for name in merged.state_dict())
    assert not torch.equal(
        merged.model.layers[0].self_attn.q_proj.weight, base.model.layers[0].self_attn.q_proj.weight
    )
    assert torch.equal(merged.model.embed_tokens.weight, base.model.embed_tokens.weight)
    samples = sft_samples(corpus, AutoTokenizer.from_pretrained(out), 128)
    batch = collate(samples, 0)
    with torch.no_grad():
        assert merged(**batch).loss < base(**batch).loss - 0.02


def test_time_budget_stops_training(corpus, tokenizer_dir, tmp_path):
    out = CptTrainer().train(
        corpus,
        {
            **BASE,
            "tokenizer": str(tokenizer_dir),
            "output_dir": str(tmp_path / "t"),
            "time_budget_s": 1.0,
            "max_steps": 100_000,
        },
    )
    log = [json.loads(line) for line in (Path(out) / "train_log.jsonl").read_text().splitlines()]
    assert 1 <= len(log) < 100_000 and log[-1]["elapsed_s"] < 10
    assert (Path(out) / "config.json").is_file()


def test_bad_model_and_tokenizer_give_clear_errors(corpus, tokenizer_dir, tmp_path):
    with pytest.raises(ModelSpecError) as err:
        CptTrainer().train(
            corpus,
            {
                "model": "gigantic",
                "tokenizer": str(tokenizer_dir),
                "output_dir": str(tmp_path / "x"),
            },
        )
    assert "gigantic" in str(err.value) and all(name in str(err.value) for name in PRESETS)
    with pytest.raises(ModelSpecError, match="no/such/dir"):
        load_model("no/such/dir")
    with pytest.raises(ModelSpecError, match="missing-tok.* is not a directory"):
        CptTrainer().train(
            corpus, {"tokenizer": str(tmp_path / "missing-tok"), "output_dir": str(tmp_path / "y")}
        )
    with pytest.raises(ValueError, match=r"unknown option 'max_stepz'; valid options: .*max_steps"):
        CptTrainer().train(corpus, {"output_dir": str(tmp_path / "z"), "max_stepz": 3})
    with pytest.raises(ValueError, match=r"lr: Input should be greater than 0"):
        CptTrainer().train(corpus, {"output_dir": str(tmp_path / "z"), "lr": -1.0})
    assert not (tmp_path / "z").exists()
