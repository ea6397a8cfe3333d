"""Torch in a process forked from one that had already loaded it: one intra-op thread.

Gymnasium's ``AsyncVectorEnv`` starts its workers with ``fork`` (the default start method on
Linux before Python 3.14). ``gymnasium.make_vec("agentworld/sim-v0", vectorization_mode=
"async")`` first makes one environment in the parent to read its spaces, which loads the world
model and starts torch's OpenMP intra-op thread pool; a forked child inherits the pool's state
but not its threads, and its first parallel region waits for them forever (the hang of issue
35). PyTorch's own ``DataLoader`` workers run on one thread for the same reason. A world model
loaded in such a child (:meth:`agentworld.sim.backends.hf.HFBackend.load`) therefore first calls
:func:`limit_threads_after_fork`; a ``spawn`` or ``forkserver`` child starts torch afresh and
keeps its threads.

Importing this module registers an ``os.register_at_fork`` hook that only records whether torch
was loaded at the fork (no torch call runs between fork and ``exec``).
"""

from __future__ import annotations

import os
import sys

_forked_with_torch = False


def _after_fork_in_child() -> None:
    global _forked_with_torch
    _forked_with_torch = _forked_with_torch or "torch" in sys.modules


os.register_at_fork(after_in_child=_after_fork_in_child)


def forked_with_torch() -> bool:
    """Whether this process was forked (at any depth) from a process that had imported torch."""
    return _forked_with_torch


def limit_threads_after_fork() -> bool:
    """Set torch to one intra-op thread when this process was forked from one that had loaded
    torch (see the module docstring); returns whether it did."""
    if not _forked_with_torch:
        return False
    import torch

    torch.set_num_threads(1)
    return True
