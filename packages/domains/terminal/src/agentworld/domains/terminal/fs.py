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
``output_regex`` (``re.search``) are tested on the output of the step just
taken. Other keys (``goal``: the intended operation, read by the scripted
expert) are ignored.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import sys
from pathlib import Path, PurePosixPath
from typing import Any

SETUP_MTIME = 1_704_067_200  # 2024-01-01T00:00:00Z, seconds since the epoch
SNAPSHOT_LIMIT = 200
DIR_MODE, FILE_MODE = 0o755, 0o644  # of set-up entries: drwxr-xr-x, -rw-r--r--


def _inside(root: Path, rel: str) -> Path:
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise ValueError(f"set-up path must be relative and inside the root: {rel!r}")
    return root.joinpath(*parts)


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


def _describe(path: Path, st: os.stat_result) -> str:
    if stat.S_ISDIR(st.st_mode):
        return "<dir>"
    if stat.S_ISLNK(st.st_mode):
        return "-> " + os.readlink(path)
    if not stat.S_ISREG(st.st_mode):
        return "<special>"
    digest = hashlib.sha1()
    try:
        with open(path, "rb") as fh:
            digest.update(fh.read(1 << 20))
    except OSError:
        return f"{st.st_size}B <unreadable>"
    return f"{st.st_size}B {digest.hexdigest()[:10]}"


def freeze_times(root: Path, limit: int = 10 * SNAPSHOT_LIMIT) -> int:
    """Set the access and modification times of ``root`` and everything under it to
    :data:`SETUP_MTIME` where they differ (symbolic links themselves, not their targets).

    Returns:
        The number of entries changed. Entries that vanish or refuse meanwhile are skipped;
        the walk stops after ``limit`` entries (a command that made more is rare and slow).
    """
    changed = seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        seen += 1 + len(filenames)
        if seen > limit:
            break
        base = Path(dirpath)
        # Directories are visited as ``base`` of their own walk step; links to them are not.
        links = [name for name in dirnames if (base / name).is_symlink()]
        for path in (base, *(base / name for name in [*filenames, *links])):
            try:
                if path.lstat().st_mtime != SETUP_MTIME:
                    os.utime(path, (SETUP_MTIME, SETUP_MTIME), follow_symlinks=False)
                    changed += 1
            except OSError:
                continue
    return changed


def snapshot(root: Path, limit: int = SNAPSHOT_LIMIT) -> dict[str, str]:
    """The file tree under ``root``: ``{relative_path: "<dir>" | "SIZEB SHA1[:10]" | "-> target"}``.

    Sorted by path; at most ``limit`` entries, then a ``"<truncated>"`` key
    with the number of entries left out (counting stops at ``10 * limit``).
    """
    out: dict[str, str] = {}
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(dirpath)
        for name in sorted([*dirnames, *filenames]):
            seen += 1
            if seen > 10 * limit:
                break
            if len(out) < limit:
                path = base / name
                try:
                    out[path.relative_to(root).as_posix()] = _describe(path, path.lstat())
                except OSError:
                    continue
        if seen > 10 * limit:
            break
    if seen > limit:
        out["<truncated>"] = str(seen - limit)
    return dict(sorted(out.items()))


def remove_tree(root: Path) -> None:
    """Delete ``root`` recursively, restoring permissions the agent removed. Never raises."""

    def retry(func: Any, path: str, _exc: Any) -> None:
        try:
            os.chmod(os.path.dirname(path), 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
            func(path)
        except OSError:
            pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(root, onexc=retry)
    else:
        shutil.rmtree(root, onerror=retry)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    except OSError:
        return None


def check_success(root: Path, check: dict[str, Any], output: str, cwd: str) -> bool:
    """Whether ``check`` holds for the tree under ``root``, the step ``output`` and ``cwd``."""
    if not check:
        return False
    try:
        if not all(_inside(root, p).is_dir() for p in check.get("dirs", [])):
            return False
        if not all(os.path.lexists(_inside(root, p)) for p in check.get("exists", [])):
            return False
        if any(os.path.lexists(_inside(root, p)) for p in check.get("absent", [])):
            return False
    except ValueError:
        return False
    for rel, want in check.get("files", {}).items():
        text = _read(_inside(root, rel))
        if text is None:
            return False
        if "equals" in want and text != want["equals"]:
            return False
        if not all(s in text for s in want.get("contains", [])):
            return False
        if any(s in text for s in want.get("lacks", [])):
            return False
    if "cwd" in check and cwd != check["cwd"]:
        return False
    if "output_regex" in check and re.search(check["output_regex"], output) is None:
        return False
    return all(s in output for s in check.get("output_contains", []))
