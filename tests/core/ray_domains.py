"""Domains the Ray collection tests send to Ray workers (importable there through
``PYTHONPATH``): the example echo domain, whose environment leaves a file per episode it
starts and can wait, once, to be killed."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from agentworld_echo import EchoDomain, EchoEnv


class RecordingEnv(EchoEnv):
    """:class:`EchoEnv` that writes ``runs/<seed>-<uuid>`` at each reset; at the reset with
    seed ``hang_seed`` (the first time only) it writes its process id to ``runs/hung`` and
    sleeps until it is killed."""

    def __init__(self, runs: Path, hang_seed: int | None) -> None:
        self.runs, self.hang_seed = runs, hang_seed

    def reset(self, *, seed=None, options=None):
        (self.runs / f"{seed}-{uuid.uuid4().hex}").touch()
        hung = self.runs / "hung"
        if seed == self.hang_seed and not hung.exists():
            (self.runs / "hung.tmp").write_text(str(os.getpid()))
            (self.runs / "hung.tmp").rename(hung)
            time.sleep(300)
        return super().reset(seed=seed, options=options)


class RecordingEcho(EchoDomain):
    """The echo domain on :class:`RecordingEnv`."""

    def __init__(self, runs: Path, hang_seed: int | None = None) -> None:
        self.runs, self.hang_seed = Path(runs), hang_seed

    def make_env(self, **kwargs):
        return RecordingEnv(self.runs, self.hang_seed)

    def runs_of(self, seed: int) -> int:
        """Episodes started with ``seed`` so far, in every process."""
        return len(list(self.runs.glob(f"{seed}-*")))
