"""A user's own home directory (``--set home=DIR``), copied into every episode's home.

:func:`read_home` reads ``DIR`` once into set-up data (``{"dirs": [...], "files": {path:
text}}``, the format of :mod:`agentworld.domains.terminal.fs`): every directory and every
UTF-8 text file under it, hidden ones included. Symbolic links are not followed (neither to
files nor to directories, so nothing outside ``DIR`` is read) and are left out, as are
binary files (a NUL byte, or not UTF-8) and anything but regular files and directories. The
whole is bounded (:data:`MAX_HOME_BYTES` of text, :data:`MAX_HOME_ENTRIES` entries): a
larger folder is refused, since every task's set-up holds it.

:func:`with_home` merges it into a task's set-up (the task's own files win a clash), so the
episode's home holds both and the recorded task says so. The world model's description of that
home is bounded (``state_chars``, default :data:`~agentworld.domains.terminal.state_text.
HOME_STATE_CHARS`; ``--set home_state_chars=N``): every folder is listed, but files' text
only while it fits, smallest first (:mod:`agentworld.domains.terminal.state_text`), since a
real folder's text (199,480 characters for the webcolors sdist) fills any context a world
model is trained at. :class:`HomeTaskSampler` and :class:`HomeTaskingPolicy` apply it to the
domain's sampled tasks and to the tasks a policy brings.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from agentworld.core.types import Action, Observation, Task
from agentworld.domains.terminal.state_text import HOME_STATE_CHARS, STATE_CHARS_KEY
from agentworld.domains.terminal.tasks import TerminalTaskSampler
from agentworld.domains.terminal.task_data import path_parts

MAX_HOME_BYTES = 256 << 10
MAX_HOME_ENTRIES = 500


def read_home(directory: Path) -> tuple[dict[str, Any], int]:
    """``(set-up data, number of entries left out)`` of the folder ``directory``.

    Raises:
        ValueError: ``directory`` is not a folder, holds nothing to copy, or is over the
            bounds (the message names it and the bound).
    """
    root = Path(directory)
    if not root.is_dir() or root.is_symlink():
        raise ValueError(f"home {str(directory)!r} is not a folder")
    dirs: list[str] = []
    files: dict[str, str] = {}
    left_out, size, stack = 0, 0, [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                rel = Path(entry.path).relative_to(root).as_posix()
                mode = entry.stat(follow_symlinks=False).st_mode
                try:
                    path_parts(rel, "home")
                except ValueError:
                    left_out += 1
                    continue
                if stat.S_ISDIR(mode):
                    dirs.append(rel)
                    stack.append(Path(entry.path))
                elif stat.S_ISREG(mode):
                    size += entry.stat(follow_symlinks=False).st_size
                    if size <= MAX_HOME_BYTES:
                        fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                        with os.fdopen(fd, "rb") as f:  # no link followed, even if one appeared
                            data = f.read(MAX_HOME_BYTES + 1)
                        try:
                            text = data.decode("utf-8") if b"\0" not in data else None
                        except UnicodeDecodeError:
                            text = None
                        if text is None:  # binary: left out, and not counted
                            left_out, size = left_out + 1, size - len(data)
                        else:
                            files[rel] = text
                else:  # a symbolic link, socket, device or pipe
                    left_out += 1
                if size > MAX_HOME_BYTES or len(dirs) + len(files) > MAX_HOME_ENTRIES:
                    raise ValueError(
                        f"home {str(directory)!r} is too large: at most {MAX_HOME_BYTES} bytes "
                        f"of text files and {MAX_HOME_ENTRIES} files and folders are copied "
                        "into each episode (and shown to the world model)")
    if not dirs and not files:
        raise ValueError(f"home {str(directory)!r} holds no folder and no text file to copy")
    return {"dirs": sorted(dirs), "files": dict(sorted(files.items()))}, left_out


def with_home(task: Task, home: dict[str, Any], state_chars: int = HOME_STATE_CHARS) -> Task:
    """``task`` whose set-up also holds ``home``'s folders and files, but those that clash
    with the task's own (the same path, or a path under one of its files), and
    ``"state_chars": state_chars``: the bound on the world model's description of it
    (:func:`~agentworld.domains.terminal.state_text.render_setup`)."""
    setup = dict(task.setup or {})
    own_files = set(setup.get("files", {}))
    own_dirs = set(setup.get("dirs", []))

    def clashes(rel: str, is_file: bool) -> bool:
        parents = {p.as_posix() for p in PurePosixPath(rel).parents}
        return bool(parents & own_files) or rel in own_files or (is_file and rel in own_dirs)

    dirs = [d for d in home["dirs"] if not clashes(d, False)]
    files = {p: t for p, t in home["files"].items() if not clashes(p, True)}
    setup["dirs"] = sorted(own_dirs | set(dirs))
    setup["files"] = {**files, **setup.get("files", {})}
    setup[STATE_CHARS_KEY] = state_chars
    return task.model_copy(update={"setup": setup})


class HomeTaskSampler(TerminalTaskSampler):
    """The terminal's task sampler with ``home`` in every task (:func:`with_home`)."""

    def __init__(self, home: dict[str, Any], state_chars: int = HOME_STATE_CHARS,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.home, self.state_chars = home, state_chars

    def sample(self, n: int, *, seed: int) -> list[Task]:
        """The terminal's ``n`` tasks of ``seed``, each with the home added."""
        return [with_home(t, self.home, self.state_chars)
                for t in super().sample(n, seed=seed)]


class HomeTaskingPolicy:
    """A policy that brings its own tasks (``real``, ``handwritten``, ``history``) with
    ``home`` added to each (:func:`with_home`); acts as the policy it wraps."""

    def __init__(self, inner: Any, home: dict[str, Any],
                 state_chars: int = HOME_STATE_CHARS) -> None:
        self.inner, self.home, self.state_chars = inner, home, state_chars
        self.name: str = inner.name
        self.num_tasks: int | None = inner.num_tasks

    def reset(self, seed: int | None) -> None:
        """Re-seed the wrapped policy."""
        self.inner.reset(seed)

    def task(self, seed: int) -> Task:
        """The wrapped policy's task of ``seed``, with the home."""
        return with_home(self.inner.task(seed), self.home, self.state_chars)

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The wrapped policy's action."""
        return self.inner.act(task, history)
