"""The ``long`` evaluation set: the hand-written sessions chained into sessions of 30+ commands.

Fidelity drifts along an episode (a simulator's mistakes stay in its context), and the other
sets' episodes end within about 12 steps. Each long session plays consecutive hand-written
sessions (:mod:`agentworld.domains.terminal.handwritten`) one after another in one shell, with
``cd ~`` between them, on the union of their files (a later session's file of the same name
wins), until it has at least :data:`MIN_COMMANDS` command lines; the remainder joins the last
one. Every observation is what the real terminal printed; like ``handwritten`` the set is for
evaluation only (``[collect] eval_sets = ["long"]``, played with ``[collect] eval_max_steps``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from agentworld.core.types import Action, Observation, Task
from agentworld.domains.terminal.handwritten import Session, sessions
from agentworld.domains.terminal.policy_base import steps_taken

MIN_COMMANDS = 30
"""Command lines of a long session at least."""


def _chain(group: Sequence[Session], index: int) -> Session:
    commands: list[str] = []
    files: dict[str, str] = {}
    dirs: list[str] = []
    for i, session in enumerate(group):
        commands += (["cd ~"] if i else []) + list(session.commands)
        files |= session.files
        dirs += [d for d in session.dirs if d not in dirs]
    names = ", ".join(s.name for s in group)
    return Session(name=f"long-{index}", commands=tuple(commands), files=files, dirs=tuple(dirs),
                   instruction=f"Work through these in one shell session: {names}.")


@functools.cache
def long_sessions() -> tuple[Session, ...]:
    """The hand-written sessions in file order, chained greedily into sessions of at least
    :data:`MIN_COMMANDS` command lines (one session when all of them together have fewer)."""
    groups: list[list[Session]] = [[]]
    for session in sessions():
        if sum(len(s.commands) + 1 for s in groups[-1]) - 1 >= MIN_COMMANDS:
            groups.append([])
        groups[-1].append(session)
    if len(groups) > 1 and sum(len(s.commands) + 1 for s in groups[-1]) - 1 < MIN_COMMANDS:
        groups[-2] += groups.pop()
    return tuple(_chain(group, i) for i, group in enumerate(groups))


def _task(session: Session) -> Task:
    return session.task().model_copy(update={"id": session.name, "kind": "long"})


class LongSessionPolicy:
    """Replays long session ``seed % num_tasks`` (``name = "long"``), a
    :class:`~agentworld.core.protocols.TaskingPolicy` like the ``handwritten`` policy.

    Args:
        seed: Unused (the replay is fixed); accepted like the other terminal policies.
    """

    name = "long"

    def __init__(self, seed: int = 0) -> None:
        self.num_tasks: int | None = len(long_sessions())
        self._by_id = {_task(s).id: s for s in long_sessions()}

    def task(self, seed: int) -> Task:
        """The task of long session ``seed % num_tasks`` (id ``long-N``, kind ``long``)."""
        return _task(long_sessions()[seed % len(long_sessions())])

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The session's next command line; ``None`` when it is done or ``task`` is not one of
        the long sessions' tasks."""
        session = self._by_id.get(task.id) if task is not None else None
        i = steps_taken(history)
        if session is None or i >= len(session.commands):
            return None
        return Action(text=session.commands[i])
