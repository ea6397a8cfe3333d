"""The agentworld cache: one private directory tree for everything built once and reused
(downloaded base models, the search domain's corpus and BM25 index).

Root: ``$AGENTWORLD_CACHE``, else ``$XDG_CACHE_HOME/agentworld``, else ``~/.cache/agentworld``
(the XDG Base Directory Specification's cache home). Directories made here are private
(mode ``0o700``); a symbolic link in their place, a directory owned by another user, and one
that group or others may write are refused, so another user cannot plant or read what a run
caches. Entries are written whole or not at all: a file through
:func:`agentworld.core.io.atomic_write`, a directory through :func:`atomic_directory`, so a run
killed midway leaves no half-written entry for the next one to read.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path


def cache_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The cache root (see the module docstring); ``explicit`` wins when given. Not created."""
    if explicit:
        return Path(explicit)
    if os.environ.get("AGENTWORLD_CACHE"):
        return Path(os.environ["AGENTWORLD_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "agentworld"


def private_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as an existing directory, made with mode ``0o700`` (parents too) when missing.

    Raises:
        OSError: ``path`` (or a parent it makes) is a symbolic link or not a directory, is
            owned by another user, is writable by group or others, or cannot be made.
    """
    path = Path(path)
    missing = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it first
            os.mkdir(directory, 0o700)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise OSError(f"cache directory {path} is a symbolic link or not a directory; remove it "
                      "or set AGENTWORLD_CACHE to another directory")
    if info.st_uid != os.geteuid():
        raise OSError(f"cache directory {path} belongs to uid {info.st_uid}, not to this user "
                      f"(uid {os.geteuid()}): another user could plant or read its entries; set "
                      "AGENTWORLD_CACHE to a directory of your own")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise OSError(f"cache directory {path} is writable by other users (mode "
                      f"{stat.S_IMODE(info.st_mode):04o}); run chmod go-w {path} or set "
                      "AGENTWORLD_CACHE to another directory")
    return path


def cache_dir(*parts: str, root: str | os.PathLike[str] | None = None) -> Path:
    """The private directory ``ROOT/parts...`` (:func:`cache_root`, :func:`private_dir`),
    made when missing; the root and every directory below it on the way are checked as
    :func:`private_dir` checks it. ``cache_dir("search")`` is the search domain's.

    Raises:
        OSError: see :func:`private_dir`.
    """
    path = private_dir(cache_root(root))
    for part in parts:
        path = private_dir(path / part)
    return path


@contextlib.contextmanager
def atomic_directory(final: str | os.PathLike[str]) -> Iterator[Path]:
    """Build a directory entry whole: yields a fresh private directory beside ``final``; when
    the block ends without an exception it is renamed to ``final`` (one ``rename``, atomic on
    one file system), else removed. When another process put ``final`` in place first, its
    entry is kept and this one removed.

    Raises:
        OSError: the parent of ``final`` cannot be made or written.
    """
    final = Path(final)
    parent = private_dir(final.parent)
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=parent))
    try:
        yield work
        try:
            os.rename(work, final)
        except OSError:
            if not final.is_dir():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
