"""Find and kill a sandbox's leftover processes from the host.

Every sandbox has its own pid namespace whose init (bubblewrap's reaper, or ``sh`` under the
``unshare`` fallback) is the only child of the process Python started, and the shell is a child
of that init. A process the shell leaves behind (a background job, an orphan of ``setsid`` or
``nohup``) is a descendant of init, re-parented to it at worst. :func:`kill_leftovers` kills all
of them except the shell itself: the host-side half of the per-step cleanup, which holds even
when the shell's own (``kill -9 -1`` before each prompt) was disabled.

The process tree is read from ``/proc/PID/task/TID/children`` (``proc(5)``,
``CONFIG_PROC_CHILDREN``); without it, from the pid namespace of each process in ``/proc``.
"""

from __future__ import annotations

import os
import signal


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as fh:
            found += [int(p) for p in fh.read().split()]
    return found


def _same_namespace(init: int) -> list[int]:
    ns = os.readlink(f"/proc/{init}/ns/pid")
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != init:
            try:
                if os.readlink(f"/proc/{entry.name}/ns/pid") == ns:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def namespace_processes(outer: int) -> tuple[int | None, list[int]]:
    """``(init, others)``: the sandbox's init and every other process of its pid namespace.

    Args:
        outer: Host pid of the process that started the sandbox (``bwrap`` or ``unshare``).

    Returns ``(None, [])`` when the sandbox is gone.
    """
    try:
        inits = _children(outer)
        if len(inits) != 1:
            return None, []
        init, seen, todo = inits[0], [], list(_children(inits[0]))
        while todo:
            pid = todo.pop()
            seen.append(pid)
            try:
                todo += _children(pid)
            except OSError:
                continue
        return init, seen
    except FileNotFoundError:
        pass
    except OSError:
        return None, []
    try:
        inits = [int(line.split()[0]) for line in _proc_children_by_ppid(outer)]
        if len(inits) != 1:
            return None, []
        return inits[0], _same_namespace(inits[0])
    except OSError:
        return None, []


def _proc_children_by_ppid(ppid: int) -> list[str]:
    lines = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 1 and int(fields[1]) == ppid:
            lines.append(entry.name)
    return lines


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def kill_leftovers(outer: int, keep: int | None, rounds: int = 5) -> int:
    """SIGKILL every process of the sandbox started by ``outer`` except its init and ``keep``
    (the shell), repeating while new ones appear (at most ``rounds`` times).

    Returns:
        How many processes were signalled.
    """
    killed = 0
    for _ in range(rounds):
        _, others = namespace_processes(outer)
        targets = [pid for pid in others if pid != keep and not _zombie(pid)]
        if not targets:
            break
        for pid in targets:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                continue
    return killed
