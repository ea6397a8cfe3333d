"""Fixtures of the reward tests: tiny judge checkpoints (see :mod:`judge_models`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from judge_models import save_judge, train_judge

if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)  # one xdist worker per core: avoid OpenMP oversubscription


@pytest.fixture(scope="session")
def random_judge_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_judge(tmp_path_factory.mktemp("judge-random"))


@pytest.fixture(scope="session")
def trained_judge_dir(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """Trained once per test run (about 8 s): pytest-xdist workers share it through a file lock."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    root = base if worker_id == "master" else base.parent
    path = root / "rewards-trained-judge"
    with FileLock(str(path) + ".lock"):
        if not (path / "model.safetensors").exists():
            train_judge(save_judge(path))
    return path
