"""Run by ``accelerate launch --config_file examples/accelerate/fsdp_cpu.yaml`` from
``test_fsdp_cpu.py``: a 3-step SFT run of the tiny preset, FSDP2 over two CPU (gloo) processes.

Usage: ``dist_fsdp.py OUT_DIR TOKENIZER_DIR``; writes ``OUT_DIR/rank{r}.json`` with the rank's
world size, accelerate's ``distributed_type`` and ``mixed_precision``, its losses, and what it held of the parameters
during training (``local``: elements of its shards; ``full``: elements of the whole model;
``dtensor``: whether every parameter was a ``DTensor`` sharded on dimension 0), and the trained
model's logits on fixed ids, ``OUT_DIR/logits{r}.pt`` (``[1, 12, vocab]``), to compare with the
exported checkpoint. ``HANG_S`` (seconds): dump every thread's stack and exit when still running.

``LATE_RANK_S`` (seconds, default 0) makes rank 1 late inside every checkpoint save, as in
``dist_sft.py``: rank 0 must not move ``trainer_state.tmp`` into place before rank 1 wrote its
shards there.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
from pathlib import Path

import accelerate.accelerator
import torch
import torch.distributed as dist
from accelerate.state import AcceleratorState
from torch.distributed.tensor import DTensor, Shard
from transformers import Qwen3ForCausalLM

sys.path.insert(0, str(Path(__file__).parent))
from conftest import make_episodes  # noqa: E402

from agentworld.trainers.world_model.sft import SftTrainer  # noqa: E402

out, tokenizer = Path(sys.argv[1]), sys.argv[2]
torch.set_num_threads(1)
if "HANG_S" in os.environ:  # a hung collective prints every thread's stack and exits
    faulthandler.dump_traceback_later(float(os.environ["HANG_S"]), exit=True)
seen: dict = {"losses": [], "local": 0, "full": 0, "dtensor": False, "model": None}
forward = Qwen3ForCausalLM.forward


def recording_forward(self, *args, **kwargs):
    if seen["model"] is None:  # the first training forward: the model is sharded by now
        params = list(self.parameters())
        seen["model"] = self
        seen["dtensor"] = all(
            isinstance(p, DTensor) and p.placements == (Shard(0),) for p in params
        )
        seen["local"] = sum(p.to_local().numel() if isinstance(p, DTensor) else p.numel()
                            for p in params)  # fmt: skip
        seen["full"] = sum(p.numel() for p in params)
    result = forward(self, *args, **kwargs)
    if result.loss is not None and self.training:
        seen["losses"].append(result.loss.item())
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
model = seen["model"]
model.eval()
with torch.no_grad():  # every rank takes part: the forward all-gathers the shards
    logits = model(torch.arange(3, 15).unsqueeze(0), use_cache=False).logits
torch.save(logits, out / f"logits{rank}.pt")
record = {k: seen[k] for k in ("losses", "local", "full", "dtensor")}
record.update(world=int(os.environ["WORLD_SIZE"]),
              distributed_type=str(AcceleratorState().distributed_type),
              mixed_precision=AcceleratorState().mixed_precision)  # fmt: skip
(out / f"rank{rank}.json").write_text(json.dumps(record))
if dist.is_initialized():  # tear the gloo group down before exit (see dist_time_budget.py)
    dist.barrier()
    dist.destroy_process_group()
