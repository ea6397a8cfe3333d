"""Multi-process training on CPU: ``torchrun`` with the gloo backend, two processes.

(``accelerate launch --cpu --num_processes 2`` starts ONE process: accelerate runs several
CPU processes only through MPI (``--mpirun_hostfile``); ``examples/accelerate/README.md``.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("dist_sft.py")


@pytest.mark.slow
def test_two_gloo_processes_train_and_log_the_mean_loss(tmp_path, tokenizer_dir):
    # rank 1 is made late inside each checkpoint save (dist_sft.py's LATE_RANK_S), as a loaded
    # machine makes it: rank 0 must wait for it before moving the checkpoint into place
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LATE_RANK_S": "2"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           str(SCRIPT), str(tmp_path), str(tokenizer_dir)]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world"] for r in ranks] == [2, 2]
    assert [len(r["losses"]) for r in ranks] == [3, 3]  # both ranks trained every step
    assert ranks[0]["losses"] != ranks[1]["losses"]  # on different micro-batches
    log = [json.loads(x) for x in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2, 3]
    for k, record in enumerate(log):
        mean = (ranks[0]["losses"][k] + ranks[1]["losses"][k]) / 2
        assert record["loss"] == pytest.approx(mean, rel=1e-6)
    assert (tmp_path / "run" / "config.json").is_file()  # rank 0 exported the model
    state = tmp_path / "run" / "trainer_state"  # both ranks' RNG states are in the checkpoint
    assert {p.name for p in state.glob("random_states_*.pkl")} == {
        "random_states_0.pkl", "random_states_1.pkl"}
    assert not (tmp_path / "run" / "trainer_state.tmp").exists()
    # the time budget: rank 1 is past it, rank 0 not: both stop; nobody past it: neither stops
    assert [r["stop"] for r in ranks] == [[True, False, False], [True, False, False]]
