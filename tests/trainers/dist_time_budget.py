"""Run by ``torchrun --nproc-per-node 2`` from ``test_grpo_core.py``: two gloo ranks ask
:func:`agentworld.trainers.training.loop.time_is_up` with different elapsed times (rank 0 within the
budget, rank 1 past it) and write what each was told to ``OUT_DIR/rank{r}.json``.

Usage: ``dist_time_budget.py OUT_DIR``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch.distributed as dist

from agentworld.trainers.training.config import TrainConfig
from agentworld.trainers.training.loop import time_is_up
from agentworld.trainers.training.setup import make_accelerator

out = Path(sys.argv[1])
acc = make_accelerator(TrainConfig(model="tiny-test", output_dir=str(out)))
rank = acc.process_index
answers = [time_is_up(acc, 10.0, 5.0 + 10.0 * rank), time_is_up(acc, 10.0, 1.0),
           time_is_up(acc, None, 99.0)]  # fmt: skip
(out / f"rank{rank}.json").write_text(json.dumps({"world": acc.num_processes, "stop": answers}))
# leave together and tear the gloo group down: a rank that exits with the group alive can
# abort in its destructor ("terminate called without an active exception")
acc.wait_for_everyone()
dist.destroy_process_group()
