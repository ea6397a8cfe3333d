"""Toy environments of the language-model agent tests, importable by Ray workers (through
``PYTHONPATH``): a quiz that rewards one word, and a factory of it whose environments log every
step to files and can wait, at a chosen step, to be killed."""

from __future__ import annotations

import os
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from agentworld.core.types import Action, Observation, Task

WORD = "yes"
CORPUS = [
    "Say yes or no.",
    "yes",
    "no",
    "You said: yes",
    "Turn 1 of 3.",
    "Answer the question.",
]
TASKS = [
    Task(
        id=f"t{i}",
        domain="toy",
        instruction="Answer the question.",
        check={"word": WORD, "turns": 2 + i % 2},
    )
    for i in range(4)
]


class SayWordEnv:
    """Asks for ``task.check["word"]`` for ``task.check["turns"]`` turns; reward 1 for each
    action containing it. ``reset`` returns an ``Observation``, ``step`` a plain string (the
    trainer accepts both). Records the actions it received."""

    def __init__(self) -> None:
        self.received: list[object] = []
        self.closed = False

    def reset(self, *, seed=None, options=None):
        self.task = options["task"]
        self.turn, self.seed = 0, seed
        return Observation(text=f"Turn 1 of {self.task.check['turns']}. Say yes or no."), {}

    def step(self, action):
        assert isinstance(action, Action)
        self.received.append(action)
        self.turn += 1
        reward = float(self.task.check["word"] in action.text)
        done = self.turn >= self.task.check["turns"]
        text = f"You said: {action.text[:20]}\nTurn {self.turn + 1}. Say yes or no."
        return text, reward, done, False, {}

    def close(self) -> None:
        self.closed = True


_HANG = threading.Lock()


class LoggedSayWordEnv(SayWordEnv):
    """:class:`SayWordEnv` that appends ``task seed turn action`` to ``runs/steps-<id>`` at each
    step; at turn ``hang_turn`` of an episode of task ``hang_task`` it writes its process id to
    ``runs/hung-<k>`` (the first ``k < hangs`` not taken, one per process) and sleeps until
    killed."""

    def __init__(self, runs: Path, hang_task: str | None, hang_turn: int, hangs: int) -> None:
        super().__init__()
        self.runs, self.hang_task, self.hang_turn, self.hangs = runs, hang_task, hang_turn, hangs
        self.log = runs / f"steps-{uuid.uuid4().hex}"

    def step(self, action):
        if self.task.id == self.hang_task and self.turn + 1 == self.hang_turn and self._take():
            time.sleep(300)
        with self.log.open("a") as f:
            f.write(f"{self.task.id} {self.seed} {self.turn + 1} {action.text!r}\n")
        return super().step(action)

    def _take(self) -> bool:
        """Claim the next ``runs/hung-<k>`` for this process (none if it holds one)."""
        with _HANG:
            taken = [p.read_text() for p in self.runs.glob("hung-*")]
            if str(os.getpid()) in taken or len(taken) >= self.hangs:
                return False
            (self.runs / "hung.tmp").write_text(str(os.getpid()))
            (self.runs / "hung.tmp").rename(self.runs / f"hung-{len(taken)}")
            return True


@dataclass
class LoggedSayWord:
    """Factory of :class:`LoggedSayWordEnv` (picklable: Ray sends it to the actors)."""

    runs: Path
    hang_task: str | None = None
    hang_turn: int = 2
    hangs: int = 1

    def __call__(self) -> LoggedSayWordEnv:
        return LoggedSayWordEnv(self.runs, self.hang_task, self.hang_turn, self.hangs)

    def steps(self) -> list[str]:
        """Every logged step, sorted."""
        return sorted(line for p in self.runs.glob("steps-*") for line in p.read_text().splitlines())
