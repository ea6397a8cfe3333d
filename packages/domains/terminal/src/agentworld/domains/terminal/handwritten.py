"""The ``handwritten`` policy: hand-written realistic shell sessions replayed in the real sandbox.

The sessions (``data/handwritten.toml``, about 150 command lines in 23 sessions) were written by
hand to look like what people type, not like the task sampler: config files, JSON through
``python3``, loops, parameter expansion, arrays, errors, pipes, ``sed`` and ``awk`` on
real-looking files. Each session brings its own task (its files and an instruction,
:class:`agentworld.core.protocols.TaskingPolicy`), and the policy types its commands in order,
so every observation is what the real terminal printed. The set is for evaluation only:
``[collect] eval_sets = ["handwritten"]`` collects it into ``episodes/handwritten.jsonl``, which
no training stage reads.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files

from agentworld.core.types import Action, Observation, Task
from agentworld.domains.terminal.policy_base import steps_taken

DATA = "data/handwritten.toml"


@dataclass(frozen=True, slots=True)
class Session:
    """One hand-written session: its task's files, its command lines and the outputs some steps
    must print (``expect``: 1-based step -> output without the prompt line)."""

    name: str
    instruction: str
    commands: tuple[str, ...]
    files: dict[str, str] = field(default_factory=dict)
    dirs: tuple[str, ...] = ()
    expect: dict[int, str] = field(default_factory=dict)

    def task(self) -> Task:
        """The session's task: its files and directories as set-up data, no success check."""
        setup: dict = {"files": dict(self.files)}
        if self.dirs:
            setup["dirs"] = list(self.dirs)
        return Task(id=f"handwritten-{self.name}", domain="terminal",
                    instruction=self.instruction, kind="handwritten", setup=setup)


@functools.cache
def sessions() -> tuple[Session, ...]:
    """The sessions of ``data/handwritten.toml``, in file order.

    Raises:
        ValueError: a session lacks ``name``, ``instruction`` or ``commands``, or two share a name.
    """
    data = tomllib.loads(files("agentworld.domains.terminal").joinpath(DATA).read_text("utf-8"))
    out: list[Session] = []
    for i, raw in enumerate(data.get("session", [])):
        missing = [k for k in ("name", "instruction", "commands") if not raw.get(k)]
        if missing:
            raise ValueError(f"{DATA}: session {i} lacks {missing}")
        out.append(Session(
            name=raw["name"], instruction=raw["instruction"], commands=tuple(raw["commands"]),
            files=dict(raw.get("files", {})), dirs=tuple(raw.get("dirs", ())),
            expect={int(k): v for k, v in raw.get("expect", {}).items()}))
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise ValueError(f"{DATA}: duplicate session names in {names}")
    return tuple(out)


class HandwrittenPolicy:
    """Replays hand-written session ``seed % num_tasks`` (``name = "handwritten"``).

    A :class:`~agentworld.core.protocols.TaskingPolicy`: ``task(seed)`` is the session's task,
    and ``act`` types the session's commands in order, then stops; ``num_tasks`` consecutive
    seeds play every session once.

    Args:
        seed: Unused (the replay is fixed); accepted like the other terminal policies.
    """

    name = "handwritten"

    def __init__(self, seed: int = 0) -> None:
        self.num_tasks: int | None = len(sessions())
        self._by_id = {s.task().id: s for s in sessions()}

    def task(self, seed: int) -> Task:
        """The task of session ``seed % num_tasks``."""
        return sessions()[seed % len(sessions())].task()

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The session's next command line; ``None`` when it is done or ``task`` is not one of
        the sessions' tasks."""
        session = self._by_id.get(task.id) if task is not None else None
        i = steps_taken(history)
        if session is None or i >= len(session.commands):
            return None
        return Action(text=session.commands[i])
