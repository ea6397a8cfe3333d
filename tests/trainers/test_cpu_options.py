"""Trainer options for CPU training: the budget clock (wall or process CPU time)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from agentworld.trainers.cpt import CptTrainer

BASE = {"model": "tiny-test", "batch_size": 2, "max_seq_len": 64, "warmup_steps": 1, "log_every": 1}


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
