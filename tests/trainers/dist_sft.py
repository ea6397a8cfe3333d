"""Run by ``torchrun --nproc-per-node 2`` from ``test_distributed.py``: a 3-step SFT run of a
tiny preset on CPU (gloo), each rank recording the loss of every micro-batch it trained on.

Usage: ``dist_sft.py OUT_DIR TOKENIZER_DIR``; writes ``OUT_DIR/rank{r}.json``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from transformers import Qwen3ForCausalLM

sys.path.insert(0, str(Path(__file__).parent))
from conftest import make_episodes  # noqa: E402

from agentworld.trainers.world_model.sft import SftTrainer  # noqa: E402

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
SftTrainer().train(
    make_episodes(16),
    {"model": "tiny-test", "tokenizer": tokenizer, "output_dir": str(out / "run"),
     "max_steps": 3, "batch_size": 2, "max_seq_len": 128, "log_every": 1, "warmup_steps": 0},
)  # fmt: skip
rank = int(os.environ["RANK"])
(out / f"rank{rank}.json").write_text(
    json.dumps({"world": int(os.environ["WORLD_SIZE"]), "losses": losses})
)
if dist.is_initialized():  # tear the gloo group down before exit (see dist_time_budget.py)
    dist.barrier()
    dist.destroy_process_group()
