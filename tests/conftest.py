"""Shared fixtures: small hand-made episodes; the sandbox bounds this machine can give."""

from __future__ import annotations

import os

import pytest
from agentworld.core.types import Episode
from agentworld.domains.terminal.disk import UNBOUNDED_ENV
from agentworld.domains.terminal.episode_root import disk_kind
from episode_factory import make_episode


def _one_thread_per_worker() -> None:
    """Under pytest-xdist with N workers on N cores, each worker's torch (and each process a test
    starts) would run one intra-op thread per core: N*N busy threads on N cores, whose OpenMP
    spin-waits steal the other workers' time. One thread each, unless the user chose a count;
    a test that needs more threads sets them itself (``torch.set_num_threads``)."""
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")


_one_thread_per_worker()


def _accept_what_this_machine_cannot_bound() -> None:
    """Where an episode's disk cannot be bounded here (root without loop devices, a user
    without user namespaces), the terminal refuses to start unless told to accept it. The
    tests of everything else then run with per-file limits only; the tests of the bounds
    themselves are skipped, naming what is missing (tests/domains/test_terminal_bounds.py).
    An ordinary user with user namespaces needs nothing here (a tmpfs in the sandbox's own
    namespaces, tests/domains/test_terminal_user_bounds.py)."""
    accepted = [b for b in os.environ.get(UNBOUNDED_ENV, "").split(",") if b]
    if disk_kind() is None:
        accepted.append("disk")
    if accepted:
        os.environ[UNBOUNDED_ENV] = ",".join(accepted)


_accept_what_this_machine_cannot_bound()




@pytest.fixture
def episodes() -> list[Episode]:
    return [make_episode(3, "ep0"), make_episode(4, "ep1"), make_episode(1, "ep2")]
