"""Host-side directories and files of the sandbox that no other local user can redirect.

A root ``serve --real``, ``collect`` or ``run`` writes the sandbox's identity files and long
actions on the host. Were any directory on the way owned or replaceable by another user, that
user could swap it for a link and have root write the action text into any file
(``/etc/cron.d``, ``authorized_keys``). So:

* a private directory is made with ``mkdtemp`` (``mkdir`` with a random name, which fails
  rather than reuse an existing entry), and its owner and type are checked through the open
  directory fd before anything is put in it (:func:`private_dir`);
* a parent in which such directories are made must be owned by root or the caller, and when
  others can write to it, carry the sticky bit (``/tmp``): else another user could rename
  what we made there (:func:`check_parent`);
* every file is written through a directory fd, created with ``O_CREAT|O_EXCL|O_NOFOLLOW``
  under a random temporary name and renamed into place (``openat(2)``, ``renameat(2)``), so
  no link is ever followed and a reader never sees half a file (:func:`write_file`).
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeDirectoryError(RuntimeError):
    """A host directory another user could tamper with; the message names it and why."""


def check_parent(path: str | os.PathLike[str]) -> None:
    """Refuse ``path`` as a place for private directories unless no other user can rename
    entries in it: it must be a real directory (not a link) owned by root or the caller, and
    not writable by group or others unless it has the sticky bit (as ``/tmp`` does).

    Raises:
        UnsafeDirectoryError: naming ``path`` and what is wrong with it.
        FileNotFoundError: ``path`` does not exist.
    """
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeDirectoryError(f"{path} is not a directory (a link or a file)")
    if info.st_uid not in (0, os.geteuid()):
        raise UnsafeDirectoryError(
            f"{path} is owned by uid {info.st_uid}, which could replace what agentworld makes "
            "there; use a directory owned by you or root (set AGENTWORLD_TERMINAL_ROOT)"
        )
    shared = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if shared and not info.st_mode & stat.S_ISVTX:
        raise UnsafeDirectoryError(
            f"{path} is writable by other users and has no sticky bit (mode "
            f"{stat.S_IMODE(info.st_mode):o}); use a directory only you can write, or one "
            "with the sticky bit such as /tmp"
        )


def private_dir(parent: str | os.PathLike[str], prefix: str, mode: int = 0o700) -> Path:
    """A new directory ``<parent>/<prefix><random>`` that only the caller created and owns.

    Args:
        parent: An existing directory that passes :func:`check_parent`.
        prefix: Start of the name.
        mode: Permission bits set once the directory is checked (``0o711`` lets a sandbox
            uid pass through to an entry whose name it is given, without listing).

    Raises:
        UnsafeDirectoryError: ``parent`` fails :func:`check_parent`, or what was made is not
            a directory of the caller (it was raced).
    """
    check_parent(parent)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    fd = os.open(path, _DIR_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            raise UnsafeDirectoryError(f"{path} was replaced while it was being made")
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    return path


def write_file(directory: str | os.PathLike[str], name: str, data: bytes, mode: int) -> None:
    """Write ``data`` to ``directory/name`` atomically, following no link.

    The directory is opened with ``O_NOFOLLOW``; the file is created under a random name with
    ``O_EXCL|O_NOFOLLOW`` (so an entry planted there, a link included, is never opened), given
    ``mode``, and renamed over ``name`` within the same directory fd.

    Raises:
        OSError: the directory is a link or missing, or the write fails (the temporary file is
            removed then).
    """
    dir_fd = os.open(directory, _DIR_FLAGS)
    try:
        tmp = f".{name}.{secrets.token_hex(8)}.tmp"
        fd = os.open(tmp, _NEW_FILE, 0o600, dir_fd=dir_fd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            raise
    finally:
        os.close(dir_fd)


def make_dir(directory: str | os.PathLike[str], name: str, mode: int) -> Path:
    """Create directory ``directory/name`` (``mkdirat`` through an ``O_NOFOLLOW`` fd; an
    existing entry is an error) and set ``mode``.

    Raises:
        FileExistsError: ``name`` exists already (a link included).
    """
    dir_fd = os.open(directory, _DIR_FLAGS)
    try:
        os.mkdir(name, 0o700, dir_fd=dir_fd)
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
    finally:
        os.close(dir_fd)
    return Path(directory, name)
