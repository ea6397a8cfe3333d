"""FSDP2 across two CPU processes (gloo) through ``accelerate launch`` with
``examples/accelerate/fsdp_cpu.yaml``, and the FSDP settings that CPU processes refuse.

(accelerate by itself runs such a launch as plain data parallel on a machine without a GPU:
``agentworld.trainers.training.cpu_fsdp``.)
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from agentworld.trainers.training.cpu_fsdp import CpuFsdpError, cpu_fsdp_plugin

SCRIPT = Path(__file__).with_name("dist_fsdp.py")
CONFIG = Path(__file__).parents[2] / "examples" / "accelerate" / "fsdp_cpu.yaml"


@pytest.mark.slow
def test_fsdp_shards_over_two_cpu_processes_and_exports_the_full_model(tmp_path, tokenizer_dir):
    from transformers import AutoModelForCausalLM

    # rank 1 is made late inside each checkpoint save (dist_fsdp.py's LATE_RANK_S): rank 0 must
    # wait for its shards before moving trainer_state.tmp into place
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LATE_RANK_S": "2", "HANG_S": "270"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIG),
           str(SCRIPT), str(tmp_path), str(tokenizer_dir)]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for r in ranks:
        assert r["world"] == 2 and r["distributed_type"] == "DistributedType.FSDP"
        assert r["mixed_precision"] == "no"
        # every parameter a DTensor shard; each rank holds half of the elements
        assert r["dtensor"] and 0 < r["local"] < r["full"]
        assert r["local"] == pytest.approx(r["full"] / 2, rel=0.02)
        assert len(r["losses"]) == 3 and all(math.isfinite(x) for x in r["losses"])
    assert ranks[0]["local"] + ranks[1]["local"] == ranks[0]["full"]
    assert ranks[0]["losses"] != ranks[1]["losses"]  # data parallel: different micro-batches
    log = [json.loads(x) for x in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2, 3]
    for k, record in enumerate(log):  # the logged loss is the mean over ranks
        mean = (ranks[0]["losses"][k] + ranks[1]["losses"][k]) / 2
        assert record["loss"] == pytest.approx(mean, rel=1e-6)
    trained = [torch.load(tmp_path / f"logits{r}.pt") for r in (0, 1)]
    torch.testing.assert_close(trained[0], trained[1])  # one model, gathered on both ranks
    # the export is the whole trained model, loadable without torch.distributed
    model = AutoModelForCausalLM.from_pretrained(str(tmp_path / "run")).eval()
    assert sum(p.numel() for p in model.parameters()) == ranks[0]["full"]
    with torch.no_grad():
        logits = model(torch.arange(3, 15).unsqueeze(0), use_cache=False).logits
    torch.testing.assert_close(logits, trained[0], rtol=1e-5, atol=1e-5)
    state = tmp_path / "run" / "trainer_state"  # resumable state saved sharded, both ranks' RNG
    assert (state / "pytorch_model_fsdp_0").is_dir()
    assert {p.name for p in state.glob("random_states_*.pkl")} == {
        "random_states_0.pkl", "random_states_1.pkl"}
    assert not (tmp_path / "run" / "trainer_state.tmp").exists()


@pytest.mark.parametrize(
    ("variables", "message"),
    [({"FSDP_VERSION": "1"}, "fsdp_version 1"),
     ({"FSDP_VERSION": "2", "FSDP_OFFLOAD_PARAMS": "true"}, "fsdp_offload_params")],
)  # fmt: skip
def test_cpu_fsdp_refuses_what_torch_cannot_run_on_cpu(monkeypatch, variables, message):
    for key, value in variables.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(CpuFsdpError, match=message):
        cpu_fsdp_plugin()


def test_cpu_fsdp_plugin_reads_the_launch_variables(monkeypatch):
    monkeypatch.setenv("FSDP_VERSION", "2")
    monkeypatch.setenv("FSDP_RESHARD_AFTER_FORWARD", "false")
    plugin = cpu_fsdp_plugin()
    assert plugin.fsdp_version == 2 and plugin.reshard_after_forward is False
