"""Run by ``torchrun --nproc-per-node 2`` from ``test_distributed.py``: a 3-step SFT run of a
tiny preset on CPU (gloo), each rank recording the loss of every micro-batch it trained on.

Usage: ``dist_sft.py OUT_DIR TOKENIZER_DIR``; writes ``OUT_DIR/rank{r}.json``.

After training, the two ranks also ask :func:`agentworld.trainers.training.loop.time_is_up`
with different elapsed times (rank 0 within the budget, rank 1 past it) and record what each
was told under ``"stop"`` (one launch of two processes serves both checks).

``LATE_RANK_S`` (seconds, default 0) makes rank 1 late inside every checkpoint save: it sleeps
after ``Accelerator.save_state`` has created the directory and before it writes its own
``random_states_1.pkl``, the window in which rank 0 used to rename that directory away (the race
that failed this test on a loaded machine: rank 1 died on a missing file, rank 0 then saw
"Connection closed by peer").
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import accelerate.accelerator
import torch
import torch.distributed as dist
from transformers import Qwen3ForCausalLM

sys.path.insert(0, str(Path(__file__).parent))
from agentworld.trainers.training.config import TrainConfig  # noqa: E402
from agentworld.trainers.training.loop import time_is_up  # noqa: E402
from agentworld.trainers.training.setup import make_accelerator  # noqa: E402
from agentworld.trainers.world_model.sft import SftTrainer  # noqa: E402
from conftest import make_episodes  # noqa: E402

out, tokenizer = Path(sys.argv[1]), sys.argv[2]
torch.set_num_threads(1)
losses: list[float] = []
forward = Qwen3ForCausalLM.forward


def recording_forward(self, *args, **kwargs):
    result = forward(self, *args, **kwargs)
    if result.loss is not None and self.training:
        losses.append(result.loss.item())
    return result


Qwen3ForCausalLM.forward = recording_forward
late_s = float(os.environ.get("LATE_RANK_S", "0"))
save_accelerator_state = accelerate.accelerator.save_accelerator_state


def late_save_accelerator_state(*args, **kwargs):
    if int(os.environ["RANK"]) == 1:
        time.sleep(late_s)
    return save_accelerator_state(*args, **kwargs)


if late_s > 0:
    accelerate.accelerator.save_accelerator_state = late_save_accelerator_state
SftTrainer().train(
    make_episodes(16),
    {"model": "tiny-test", "tokenizer": tokenizer, "output_dir": str(out / "run"),
     "max_steps": 3, "batch_size": 2, "max_seq_len": 128, "log_every": 1, "warmup_steps": 0},
)  # fmt: skip
rank = int(os.environ["RANK"])
acc = make_accelerator(TrainConfig(model="tiny-test", output_dir=str(out / "budget")))
stop = [time_is_up(acc, 10.0, 5.0 + 10.0 * rank), time_is_up(acc, 10.0, 1.0),
        time_is_up(acc, None, 99.0)]  # fmt: skip
(out / f"rank{rank}.json").write_text(
    json.dumps({"world": int(os.environ["WORLD_SIZE"]), "losses": losses, "stop": stop})
)
if dist.is_initialized():  # tear the gloo group down before exit (see dist_time_budget.py)
    dist.barrier()
    dist.destroy_process_group()
