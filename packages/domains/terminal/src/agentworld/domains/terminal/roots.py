"""Where episode roots live, and the order in which their directories list.

``find``, ``grep -r`` and ``du`` print a directory's entries in the order the file system's
``readdir`` returns them, not sorted as ``ls`` does. On ext4 and xfs that order follows a hash
of the name seeded per file system: no world model can predict it, and the same seed collects a
different ``find`` output on every machine. On tmpfs it follows creation order: oldest first or
newest first, depending on the kernel (newest first on Linux 6.18, measured). On a file system
that lists in creation order, :func:`agentworld.domains.terminal.fs.apply_setup` creates a task's
entries in the order that makes every set-up directory list sorted; entries a command creates
later then list first (or last) by the kernel's rule, which the episode shows. Episode roots go
on tmpfs only on request (:func:`default_root_parent`).
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

ROOT_ENV = "AGENTWORLD_TERMINAL_ROOT"  # directory for episode roots (overrides the default)
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


def default_root_parent() -> str | None:
    """The directory under which episode roots are created by default:
    ``$AGENTWORLD_TERMINAL_ROOT`` when set, else ``None`` (the system temporary directory).

    ``AGENTWORLD_TERMINAL_ROOT=/dev/shm`` (tmpfs) makes ``find`` and ``grep -r`` print set-up
    entries in name order on every machine. It is not the default: ``ls -l`` then shows tmpfs
    directory sizes (40 bytes + 20 per entry) instead of ext4's constant 4,096, and three
    quickstart runs on tmpfs data averaged 0.469 exact match on non-empty outputs against
    0.505 in two runs of the same code on ``/tmp`` (bench/README.md, session 11).
    """
    return os.environ.get(ROOT_ENV) or None
