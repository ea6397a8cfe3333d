"""Where episode roots live, and the order in which their directories list.

``find``, ``grep -r`` and ``du`` print a directory's entries in the order the file system's
``readdir`` returns them, not sorted as ``ls`` does. On ext4 and xfs that order follows a hash
of the name seeded per file system: no world model can predict it, and the same seed collects a
different ``find`` output on every machine. On tmpfs it follows creation order: oldest first or
newest first, depending on the kernel (newest first on Linux 6.18, measured). So episode roots go
on tmpfs (``/dev/shm``) where one is usable, and :func:`agentworld.domains.terminal.fs.apply_setup`
creates a task's entries in the order that makes every set-up directory list sorted; entries a
command creates later then list first (or last) by the kernel's rule, which the episode shows.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

ROOT_ENV = "AGENTWORLD_TERMINAL_ROOT"  # directory for episode roots (overrides the default)
SHM = "/dev/shm"
MIN_FREE_BYTES = 256 << 20  # least free space on tmpfs for it to hold episode roots
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
    """The directory under which episode roots are created by default.

    ``$AGENTWORLD_TERMINAL_ROOT`` when set; else ``/dev/shm`` when it lists entries in creation
    order, allows executing files and has :data:`MIN_FREE_BYTES` free; else ``None`` (the system
    temporary directory).
    """
    if os.environ.get(ROOT_ENV):
        return os.environ[ROOT_ENV]
    try:
        fs = os.statvfs(SHM)
    except OSError:
        return None
    usable = not fs.f_flag & os.ST_NOEXEC and fs.f_bavail * fs.f_frsize >= MIN_FREE_BYTES
    return SHM if usable and os.access(SHM, os.W_OK | os.X_OK) and listing_order(SHM) else None
