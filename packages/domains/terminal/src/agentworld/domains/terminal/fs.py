"""Episode root directories: task set-up, file-tree snapshots and success checks.

Set-up data (``Task.setup``)::

    {"dirs": ["docs", "docs/old"], "files": {"docs/todo.txt": "buy milk\\n"}}

Every created file and directory gets the modification time
:data:`SETUP_MTIME` (2024-01-01 00:00:00 UTC), so ``ls -l`` of set-up files
is reproducible. After every command the environment resets the times of
entries the command touched to the same instant (:func:`freeze_times`): the
episode's clock, as file times show it, stays at 2024-01-01 00:00, so no
observation depends on when the episode was collected.

Check data (``Task.check``), all conditions must hold::

    {"dirs": [path], "exists": [path], "absent": [path],
     "files": {path: {"equals": text, "contains": [text], "lacks": [text]}},
     "cwd": "/home/agent/docs", "output_contains": [text], "output_regex": pattern}

Paths are relative to the episode root; ``output_contains`` and
``output_regex`` (a search by RE2, in linear time:
:mod:`agentworld.domains.terminal.regexes`) are tested on the output of the step just
taken. Other keys (``goal``: the intended operation, read by the scripted
expert) are ignored.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from agentworld.domains.terminal import regexes
from agentworld.domains.terminal.safefs import (
    Entry,
    WalkStats,
    lookup,
    lstat_at,
    open_root,
    read_regular,
    remove_tree,
    walk,
)
from agentworld.domains.terminal.task_data import path_parts

__all__ = [
    "apply_setup",
    "check_success",
    "freeze_times",
    "output_holds",
    "remove_tree",
    "snapshot",
]

SETUP_MTIME = 1_704_067_200  # 2024-01-01T00:00:00Z, seconds since the epoch
SNAPSHOT_LIMIT = 200  # entries of a snapshot
MAX_DEPTH = 32  # directory levels under the root that snapshots and freeze_times enter
HASH_BYTES = 1 << 20  # of one file, hashed in a snapshot
SNAPSHOT_BYTES = 16 << 20  # read in all by one snapshot
CHECK_BYTES = 1 << 20  # largest file a "files" check condition reads
DIR_MODE, FILE_MODE = 0o755, 0o644  # of set-up entries: drwxr-xr-x, -rw-r--r--


def _inside(root: Path, rel: str) -> Path:
    return root.joinpath(*path_parts(rel, "set-up path"))


def apply_setup(root: Path, setup: dict[str, Any], order: str | None = None) -> None:
    """Create ``setup``'s directories and files under ``root`` with fixed mtimes and modes
    (:data:`DIR_MODE`, :data:`FILE_MODE`).

    Args:
        root: The episode root (an existing, empty directory).
        setup: ``{"dirs": [...], "files": {path: text}}`` (see the module docstring).
        order: How directories under ``root`` list their entries
            (:func:`agentworld.domains.terminal.roots.listing_order`): with
            ``"oldest_first"`` or ``"newest_first"`` each directory's entries are created in
            the order that makes it list them sorted by name, as ``ls`` does.

    Raises:
        ValueError: a path is absolute or leaves the root.
    """
    # relative path -> (path as given, file content or None for a directory)
    entries = {PurePosixPath(rel): (rel, None) for rel in setup.get("dirs", [])}
    entries.update((PurePosixPath(rel), (rel, text)) for rel, text in setup.get("files", {}).items())
    made: list[Path] = []
    # Sorted by path component ("a" < "a/x" < "a-b"): parents come before their entries and each
    # directory's entries in name order. Created in that order, a directory that lists oldest
    # first lists them by name; created in reverse, so does one that lists newest first.
    for key in sorted(entries, key=lambda rel: rel.parts, reverse=order == "newest_first"):
        rel, text = entries[key]
        path = _inside(root, rel)
        if text is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        else:
            path.mkdir(parents=True, exist_ok=True)
        made.append(path)
    for path in sorted(
        {*made, *(p for m in made for p in m.parents if root in p.parents)},
        key=lambda p: -len(p.parts),
    ):
        os.chmod(path, DIR_MODE if path.is_dir() else FILE_MODE)  # whatever the umask
        os.utime(path, (SETUP_MTIME, SETUP_MTIME), follow_symlinks=False)
    os.utime(root, (SETUP_MTIME, SETUP_MTIME))


def _describe(entry: Entry, budget: list[int]) -> str:
    st = entry.st
    if stat.S_ISDIR(st.st_mode):
        return "<dir>"
    if stat.S_ISLNK(st.st_mode):
        try:
            return "-> " + os.readlink(entry.name, dir_fd=entry.dir_fd)
        except OSError:
            return "-> ?"
    if not stat.S_ISREG(st.st_mode):
        return "<special>"
    if budget[0] <= 0:
        return f"{st.st_size}B <not hashed>"
    data = read_regular(entry.dir_fd, entry.name, min(HASH_BYTES, budget[0]), prefix=True)
    if data is None:
        return f"{st.st_size}B <unreadable>"
    budget[0] -= len(data)
    return f"{st.st_size}B {hashlib.sha1(data).hexdigest()[:10]}"


def freeze_times(root: Path, limit: int = 10 * SNAPSHOT_LIMIT) -> int:
    """Set the access and modification times of ``root`` and everything under it to
    :data:`SETUP_MTIME` where they differ (symbolic links themselves, not their targets).

    Returns:
        The number of entries changed. Entries that vanish or refuse meanwhile are skipped;
        the walk (:func:`agentworld.domains.terminal.safefs.walk`) stops after ``limit``
        entries and does not enter directories more than :data:`MAX_DEPTH` levels down (a
        command that made more is rare and slow).
    """
    try:
        root_fd = open_root(root)
    except OSError:
        return 0
    changed = 0
    try:
        with contextlib.suppress(OSError):
            if os.fstat(root_fd).st_mtime != SETUP_MTIME:
                os.utime(root_fd, (SETUP_MTIME, SETUP_MTIME))
                changed += 1
        for entry in walk(root_fd, max_entries=limit, max_depth=MAX_DEPTH):
            if entry.st.st_mtime != SETUP_MTIME:
                with contextlib.suppress(OSError):
                    os.utime(
                        entry.name,
                        (SETUP_MTIME, SETUP_MTIME),
                        dir_fd=entry.dir_fd,
                        follow_symlinks=False,
                    )
                    changed += 1
    finally:
        os.close(root_fd)
    return changed


def snapshot(root: Path, limit: int = SNAPSHOT_LIMIT) -> dict[str, str]:
    """The file tree under ``root``: ``{relative_path: "<dir>" | "SIZEB SHA1[:10]" | "-> target"
    | "<special>"}``, sorted by path.

    Bounded whatever the agent made: at most ``limit`` entries, then a ``"<truncated>"`` key with
    the number of entries left out (counting stops at ``10 * limit``); directories more than
    :data:`MAX_DEPTH` levels down are listed but not entered (``"<not entered>"``: how many);
    the hash covers a file's first :data:`HASH_BYTES` bytes and at most
    :data:`SNAPSHOT_BYTES` are read in all (``"SIZEB <not hashed>"`` after that). Links are
    shown, never followed; fifos, sockets and devices are ``"<special>"`` and never opened.
    """
    try:
        root_fd = open_root(root)
    except OSError:
        return {}
    out: dict[str, str] = {}
    stats = WalkStats()
    budget = [SNAPSHOT_BYTES]
    seen = 0
    try:
        for entry in walk(root_fd, max_entries=10 * limit, max_depth=MAX_DEPTH, stats=stats):
            seen += 1
            if len(out) < limit:
                out[entry.path] = _describe(entry, budget)
    finally:
        os.close(root_fd)
    seen += stats.unlisted
    if seen > limit:
        out["<truncated>"] = str(seen - limit)
    if stats.unentered:
        out["<not entered>"] = str(stats.unentered)
    return dict(sorted(out.items()))


def _text(root_fd: int, rel: str) -> str | None:
    with lookup(root_fd, path_parts(rel, "check path")) as at:
        if at is None:
            return None
        data = read_regular(*at, CHECK_BYTES)
    return None if data is None else data.decode("utf-8", errors="replace")


def _kind(root_fd: int, rel: str) -> int | None:
    """``st_mode`` of ``rel`` (the link itself for a link); ``None`` when missing or when a
    directory on the way is a link."""
    with lookup(root_fd, path_parts(rel, "check path")) as at:
        st = None if at is None else lstat_at(*at)
    return None if st is None else st.st_mode


def check_success(root: Path, check: dict[str, Any], output: str, cwd: str) -> bool:
    """Whether ``check`` holds for the tree under ``root``, the step ``output`` and ``cwd``.

    The tree is read without following any link (:mod:`agentworld.domains.terminal.safefs`):
    a link never counts as a directory or a file, a path through a linked directory does not
    exist, and ``files`` conditions read regular files of at most :data:`CHECK_BYTES` bytes
    (a larger one, a fifo, socket or device fails them). So the reward reveals nothing outside
    the episode root. ``check`` is validated before the episode
    (:func:`agentworld.domains.terminal.task_data.validate_check`); data that is not valid
    fails the check instead of raising.
    """
    if not check:
        return False
    try:
        root_fd = open_root(root)
    except OSError:
        return False
    try:
        return _holds(root_fd, check, output, cwd)
    except (ValueError, TypeError, AttributeError):
        return False
    finally:
        os.close(root_fd)


def _holds(root_fd: int, check: dict[str, Any], output: str, cwd: str) -> bool:
    named = [rel for key in ("dirs", "exists", "absent") for rel in check.get(key, [])]
    kinds = {rel: _kind(root_fd, rel) for rel in named}
    if not all(kinds[p] is not None and stat.S_ISDIR(kinds[p]) for p in check.get("dirs", [])):
        return False
    if not all(kinds[p] is not None for p in check.get("exists", [])):
        return False
    if any(kinds[p] is not None for p in check.get("absent", [])):
        return False
    for rel, want in check.get("files", {}).items():
        text = _text(root_fd, rel)
        if text is None:
            return False
        if "equals" in want and text != want["equals"]:
            return False
        if not all(s in text for s in want.get("contains", [])):
            return False
        if any(s in text for s in want.get("lacks", [])):
            return False
    return output_holds(check, output, cwd)


FILE_CONDITIONS = ("dirs", "exists", "absent", "files")  # keys of a check on the file tree


def output_holds(check: dict[str, Any], output: str, cwd: str) -> bool:
    """Whether the conditions of ``check`` on what the terminal shows hold: ``cwd`` (absolute),
    ``output_regex`` (:func:`agentworld.domains.terminal.regexes.search`, linear time) and
    ``output_contains`` on the step's ``output``. The file conditions (:data:`FILE_CONDITIONS`)
    are not looked at.

    Raises:
        ValueError: ``output_regex`` is no pattern RE2 compiles (see
            :func:`~agentworld.domains.terminal.regexes.compile_pattern`)."""
    if "cwd" in check and cwd != check["cwd"]:
        return False
    if "output_regex" in check and not regexes.search(check["output_regex"], output):
        return False
    return all(s in output for s in check.get("output_contains", []))
