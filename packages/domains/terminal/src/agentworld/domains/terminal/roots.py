"""Where episode roots live, and the order in which their directories list.

``find``, ``grep -r`` and ``du`` print a directory's entries in the order the file system's
``readdir`` returns them, not sorted as ``ls`` does. On ext4 and xfs that order follows a hash
of the name seeded per file system: no world model can predict it, and the same seed collects a
different ``find`` output on every machine. On tmpfs it follows creation order: oldest first or
newest first, depending on the kernel (newest first on Linux 6.18, measured). On a file system
that lists in creation order, :func:`agentworld.domains.terminal.fs.apply_setup` creates a task's
entries in the order that makes every set-up directory list sorted; entries a command creates
later then list first (or last) by the kernel's rule, which the episode shows. Where the
caller can, each episode root is an ext4 file system of its own that lists in creation order
(:mod:`agentworld.domains.terminal.disk`); elsewhere, roots go on tmpfs only on request
(:func:`default_root_parent`).

Episode roots and sandbox identity files of one process live in a directory of its own,
``agentworld-run-<pid>-<start time>-<random>`` (:func:`session_dir`), made with ``mkdtemp``
and checked (:func:`agentworld.domains.terminal.hostfiles.private_dir`): its name cannot be
predicted, so no other local user can make it first and own the parent of root's files. A
process killed before it could clean up (a SIGKILLed ``collect``) leaves that directory
behind; the next process to create its own removes every such directory whose owner is gone
(:func:`sweep_dead_sessions`).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import tempfile
from pathlib import Path

from agentworld.core.owned_dirs import owned_prefix, start_time, sweep_dead
from agentworld.domains.terminal.disk import mounts_under, unmount
from agentworld.domains.terminal.hostfiles import private_dir
from agentworld.domains.terminal.safefs import remove_tree

ROOT_ENV = "AGENTWORLD_TERMINAL_ROOT"  # directory for episode roots (overrides the default)
SESSION_PREFIX = "agentworld-run-"
_PROBE = ("05", "02", "07", "00", "06", "03", "01", "04")  # created in this (unsorted) order


@functools.cache
def listing_order(parent: str) -> str | None:
    """How a new directory under ``parent`` lists its entries (measured once per ``parent``).

    Returns:
        ``"oldest_first"`` or ``"newest_first"`` (creation order, as on tmpfs), or ``None``:
        any other order (a hash of the name, as on ext4), or ``parent`` is not writable.
    """
    try:
        probe = Path(tempfile.mkdtemp(prefix=".agentworld-order-", dir=parent))
    except OSError:
        return None
    try:
        for name in _PROBE:
            (probe / name).mkdir()
        listed = tuple(os.listdir(probe))
    except OSError:
        return None
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    if listed == _PROBE:
        return "oldest_first"
    return "newest_first" if listed == _PROBE[::-1] else None


_start_time = start_time  # tests predict session names with it


def sweep_dead_sessions(parent: str) -> list[str]:
    """Remove the session directories under ``parent`` whose owning process is gone
    (:func:`agentworld.core.owned_dirs.sweep_dead`).

    Only directories (not links) owned by this process's user are touched; a directory whose
    pid is alive with the recorded start time is kept. The episode file systems mounted in it
    (:mod:`agentworld.domains.terminal.disk`) are unmounted first. Returns the paths removed.
    """
    return sweep_dead(parent, SESSION_PREFIX, before=_unmount_inside, remove=_remove_inside)


def _unmount_inside(path: str) -> None:
    for point in mounts_under(path):  # episode file systems of the dead process
        unmount(point)


def _remove_inside(top: str) -> None:
    """Delete the directory ``top`` (claimed, nothing else removes it), first giving back the
    owner's permissions an agent may have taken from directories inside it. Never follows a
    link, never touches anything outside ``top``, never recurses (a tree of any depth:
    :func:`agentworld.domains.terminal.safefs.remove_tree`)."""
    remove_tree(Path(top))


def session_dir(parent: str | None = None) -> str:
    """This process's directory for episode roots and sandbox identity files.

    ``agentworld-run-<pid>-<start time>-<random>`` (mode 0711, so a sandbox uid can pass
    through to its episode root without listing the others) under ``parent`` (default ``$AGENTWORLD_TERMINAL_ROOT`` or the system temporary
    directory), created on first use after :func:`sweep_dead_sessions`, and removed at exit
    when empty. A forked child gets a directory of its own.

    Raises:
        UnsafeDirectoryError: ``parent`` could be tampered with by another user (owned by
            another user, or writable by others without the sticky bit).
    """
    base = parent or os.environ.get(ROOT_ENV) or tempfile.gettempdir()
    return _session_dir(base, os.getpid())


@functools.cache
def _session_dir(base: str, pid: int) -> str:
    sweep_dead_sessions(base)
    prefix = owned_prefix(SESSION_PREFIX, pid)
    path = str(private_dir(base, prefix, 0o711))
    atexit.register(_remove_if_empty, path, pid)
    return path


def _remove_if_empty(path: str, pid: int) -> None:
    if os.getpid() == pid:
        with contextlib.suppress(OSError):
            os.rmdir(path)


def default_root_parent() -> str | None:
    """The directory under which episode roots are created by default: this process's
    :func:`session_dir` under ``$AGENTWORLD_TERMINAL_ROOT`` when set, else under the system
    temporary directory.

    Where episode roots get file systems of their own (:mod:`agentworld.domains.terminal.disk`)
    the parent only holds their mount points and images. Elsewhere,
    ``AGENTWORLD_TERMINAL_ROOT=/dev/shm`` (tmpfs) makes ``find`` and ``grep -r`` print set-up
    entries in name order on every machine. It is not the default: ``ls -l`` then shows tmpfs
    directory sizes (40 bytes + 20 per entry) instead of ext4's constant 4,096, and three
    quickstart runs on tmpfs data averaged 0.469 exact match on non-empty outputs against
    0.505 in two runs of the same code on ``/tmp`` (``agentworld quickstart``, run with and
    without the variable).
    """
    return session_dir()
