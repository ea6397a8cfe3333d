"""Temporary directories named after the process that owns them, swept once it is gone.

A process killed with SIGKILL cannot remove what it made under the temporary directory (an
episode root, a tool server's state). A directory named ``<prefix><pid>-<start time>-<random>``
(:func:`owned_prefix` as ``mkdtemp``'s prefix) says which process owns it; the next process of
the same kind removes every such directory under the same parent whose owner is gone
(:func:`sweep_dead`). The owner is the pid *with* its start time, so a pid the system reused
does not keep a dead process's directory. Used by the terminal domain's session directories
(:mod:`agentworld.domains.terminal.roots`) and the mcp domain's state directories.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Callable


def start_time(pid: int) -> int | None:
    """Start time of process ``pid`` in clock ticks since boot (``proc(5)``, stat field 22), or
    ``None`` when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return int(fh.read().rpartition(")")[2].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def owned_prefix(prefix: str, pid: int | None = None) -> str:
    """``<prefix><pid>-<start time>-`` for process ``pid`` (default: this one), to pass to
    ``mkdtemp`` as its prefix."""
    pid = os.getpid() if pid is None else pid
    return f"{prefix}{pid}-{start_time(pid) or 0}-"


def _rmtree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def sweep_dead(
    parent: str,
    prefix: str,
    before: Callable[[str], None] | None = None,
    remove: Callable[[str], None] = _rmtree,
) -> list[str]:
    """Remove the directories ``<prefix><pid>-<start>-<random>`` under ``parent`` whose owner is
    gone.

    Only directories (not links) owned by this process's user are touched; one whose pid is
    alive with the recorded start time is kept. Each is first renamed to a name no sweeper
    matches (one sweeper wins a race; the others skip it), then ``remove``d.

    Args:
        parent: Directory to look in; one that cannot be listed gives ``[]``.
        prefix: The names' fixed start (e.g. ``"agentworld-mcp-"``).
        before: Called with a dead directory's path before it is claimed (e.g. to unmount
            file systems inside it).
        remove: Deletes a claimed directory (default ``shutil.rmtree``, errors ignored).

    Returns:
        The paths removed, as they were named.
    """
    pattern = re.compile(re.escape(prefix) + r"(\d+)-(\d+)-[A-Za-z0-9_]+\Z")
    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        match = pattern.match(name)
        if match is None or start_time(int(match.group(1))) == int(match.group(2)):
            continue
        path = os.path.join(parent, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            continue
        if before is not None:
            before(path)
        claimed = f"{path}.sweep-{os.getpid()}"
        try:
            os.rename(path, claimed)
        except OSError:
            continue
        remove(claimed)
        removed.append(path)
    return removed
