"""Host-side access to an episode root that never follows the agent's links.

The host process reads the episode root to check a task and to record the file tree, and it
deletes the root at the end. The agent may have put anything there: symbolic links to host files
(``/proc/self/environ``, a root-only 0600 file, a 1 GiB file), fifos that block a reader, sparse
files of terabytes, trees thousands of levels deep. So every access here goes through directory
file descriptors, one path component at a time, with ``O_NOFOLLOW`` (``openat(2)``), opens only
regular files (checked by ``lstat`` before and ``fstat`` after a non-blocking open), reads at most
a given number of bytes, and walks iteratively with a bounded depth and entry count.

Functions:

- :func:`open_dir`: a directory under a directory fd, no link followed;
- :func:`lookup`: the parent fd and final name of a relative path, no link followed;
- :func:`read_regular`: at most ``limit`` bytes of a regular file;
- :func:`walk`: entries under a root in sorted depth-first order, bounded;
- :func:`chown_tree`: hand the set-up to the sandbox uid, bounded, no link followed;
- :func:`remove_tree`: delete a tree of any depth, restoring permissions the agent removed.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
REMOVE_DEPTH = 64  # directories held open at once while deleting; deeper ones are moved up
MAX_PASSES = 10_000  # passes of remove_tree over the root at most


def open_root(root: Path) -> int:
    """A directory fd of the episode root (which must be a real directory, not a link).

    Raises:
        OSError: ``root`` is missing, a link or not a directory.
    """
    return os.open(root, _DIR_FLAGS)


def open_dir(dir_fd: int, name: str) -> int | None:
    """The fd of directory ``name`` in ``dir_fd``; ``None`` when it is a link, not a directory,
    missing or unreadable."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None


@contextlib.contextmanager
def lookup(root_fd: int, parts: tuple[str, ...]) -> Iterator[tuple[int, str] | None]:
    """``(parent directory fd, final name)`` of the relative path ``parts`` under ``root_fd``.

    Every directory on the way is opened with ``O_NOFOLLOW``: a link anywhere before the last
    component gives ``None``, as does a missing directory. The final component itself is not
    looked at. The fds are closed when the context ends.
    """
    if not parts:
        yield None
        return
    opened: list[int] = []
    try:
        fd = root_fd
        for part in parts[:-1]:
            child = open_dir(fd, part)
            if child is None:
                yield None
                return
            opened.append(child)
            fd = child
        yield fd, parts[-1]
    finally:
        for fd in opened:
            os.close(fd)


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """``lstat`` of ``name`` in ``dir_fd`` (the link itself for a link), ``None`` if missing."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None


def read_regular(dir_fd: int, name: str, limit: int, *, prefix: bool = False) -> bytes | None:
    """The content of regular file ``name`` in ``dir_fd``, at most ``limit`` bytes.

    Args:
        prefix: Return the first ``limit`` bytes of a longer file instead of ``None``.

    Returns:
        The bytes, or ``None`` when ``name`` is not a regular file (a link, fifo, socket, device,
        directory), cannot be opened, or (without ``prefix``) holds more than ``limit`` bytes.
    """
    before = lstat_at(dir_fd, name)
    if before is None or not stat.S_ISREG(before.st_mode):
        return None
    if before.st_size > limit and not prefix:
        return None
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        after = os.fstat(fd)
        if not stat.S_ISREG(after.st_mode) or not os.path.samestat(before, after):
            return None
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        data = b"".join(chunks)
        if total > limit:
            return data[:limit] if prefix else None
        return data
    except OSError:
        return None
    finally:
        os.close(fd)


@dataclass(slots=True)
class Entry:
    """One entry met by :func:`walk`: valid until the walk moves on (``dir_fd`` closes)."""

    path: str  # relative to the root, "/"-separated
    dir_fd: int  # fd of the directory holding it
    name: str
    st: os.stat_result  # lstat


@dataclass(slots=True)
class WalkStats:
    """What :func:`walk` left out: ``unlisted`` entries past ``max_entries`` (counted up to
    ``count_limit``), ``unentered`` directories deeper than ``max_depth``."""

    unlisted: int = 0
    unentered: int = 0


def _names(fd: int) -> list[str]:
    try:
        return sorted(os.listdir(fd), reverse=True)  # popped from the end: name order
    except OSError:
        return []


def walk(
    root_fd: int, *, max_entries: int, max_depth: int, stats: WalkStats | None = None
) -> Iterator[Entry]:
    """Entries under ``root_fd`` depth first, each directory's entries in name order.

    Links are reported, never followed; directories are entered through ``O_NOFOLLOW`` fds, at
    most ``max_depth`` levels below the root (deeper ones are reported but not entered: counted
    in ``stats.unentered``). After ``max_entries`` entries the walk stops; ``stats.unlisted``
    counts further entries of the directories already open. At most ``max_depth + 1`` fds are
    open at once, and no recursion is used, so any depth is safe.
    """
    stats = stats if stats is not None else WalkStats()
    stack: list[tuple[int, str, list[str]]] = [(root_fd, "", _names(root_fd))]
    seen = 0
    try:
        while stack:
            fd, prefix, names = stack[-1]
            if not names:
                stack.pop()
                if fd != root_fd:
                    os.close(fd)
                continue
            name = names.pop()
            if seen >= max_entries:
                stats.unlisted += 1 + len(names) + sum(len(n) for _, _, n in stack[:-1])
                return
            st = lstat_at(fd, name)
            if st is None:
                continue
            seen += 1
            path = f"{prefix}{name}"
            yield Entry(path, fd, name, st)
            if stat.S_ISDIR(st.st_mode):
                if len(stack) > max_depth:
                    stats.unentered += 1
                    continue
                child = open_dir(fd, name)
                if child is not None:
                    stack.append((child, f"{path}/", _names(child)))
    finally:
        for fd, _, _ in stack:
            if fd != root_fd:
                os.close(fd)


def chown_tree(root: Path, uid: int, *, max_entries: int = 100_000, max_depth: int = 64) -> None:
    """``lchown`` ``root`` and the entries under it to ``uid:uid`` without following links or
    recursing (:func:`walk`; deeper or further entries are left as they are: the sandbox made
    them, so they are its uid's already). Errors on single entries are skipped.

    Raises:
        OSError: ``root`` is not a directory that can be opened.
    """
    root_fd = open_root(root)
    try:
        os.fchown(root_fd, uid, uid)
        for entry in walk(root_fd, max_entries=max_entries, max_depth=max_depth):
            if entry.st.st_uid != uid or entry.st.st_gid != uid:
                with contextlib.suppress(OSError):
                    os.chown(entry.name, uid, uid, dir_fd=entry.dir_fd, follow_symlinks=False)
    finally:
        os.close(root_fd)


def _chmod_dir(dir_fd: int, name: str) -> None:
    """``chmod 700`` directory ``name`` without following a link (through an ``O_PATH`` fd)."""
    try:
        fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return
    try:
        os.chmod(f"/proc/self/fd/{fd}", 0o700)
    except OSError:
        pass
    finally:
        os.close(fd)


def _enter(dir_fd: int, name: str) -> int | None:
    fd = open_dir(dir_fd, name)
    if fd is None:
        _chmod_dir(dir_fd, name)  # the agent may have made it unreadable
        fd = open_dir(dir_fd, name)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o700)  # and unwritable
    return fd


def _empty(root_fd: int, moved: itertools.count) -> int:
    """One pass deleting everything under ``root_fd``; returns the entries deleted or moved.
    Directories deeper than :data:`REMOVE_DEPTH` are moved to the root for a later pass."""
    done = 0
    # (directory fd, its name in the directory below on the stack, names left to delete)
    stack: list[tuple[int, str, list[str]]] = [(root_fd, "", _names(root_fd))]
    try:
        while stack:
            fd, dir_name, names = stack[-1]
            if not names:
                stack.pop()
                if fd != root_fd:
                    os.close(fd)
                    with contextlib.suppress(OSError):
                        os.rmdir(dir_name, dir_fd=stack[-1][0])
                        done += 1
                continue
            name = names.pop()
            st = lstat_at(fd, name)
            if st is None:
                continue
            if not stat.S_ISDIR(st.st_mode):
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)
                    done += 1
                continue
            if len(stack) > REMOVE_DEPTH:
                new = f".agentworld-rm-{uuid.uuid4().hex[:8]}-{next(moved)}"
                with contextlib.suppress(OSError):
                    os.rename(name, new, src_dir_fd=fd, dst_dir_fd=root_fd)
                    done += 1
                continue
            child = _enter(fd, name)
            if child is not None:
                stack.append((child, name, _names(child)))
    finally:
        for fd, _, _ in stack:
            if fd != root_fd:
                os.close(fd)
    return done


def remove_tree(root: Path) -> None:
    """Delete ``root`` and everything under it; never raises, never recurses, never follows a
    link, holds at most :data:`REMOVE_DEPTH` + 1 fds, and restores permissions the agent
    removed. A tree deeper than :data:`REMOVE_DEPTH` is cut into pieces moved under the root,
    each deleted in a later pass."""
    try:
        root_fd = os.open(root, _DIR_FLAGS)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(root)  # a link or file in its place; nothing if it is gone
        return
    try:
        with contextlib.suppress(OSError):
            os.fchmod(root_fd, 0o700)
        moved = itertools.count()
        for _ in range(MAX_PASSES):  # bounded: a process still writing cannot hold us here
            if not _empty(root_fd, moved):
                break
    finally:
        os.close(root_fd)
    with contextlib.suppress(OSError):
        os.rmdir(root)
