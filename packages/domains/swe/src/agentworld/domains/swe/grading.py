"""Grading of an swe episode that the agent cannot touch.

The agent owns its shell and its sandbox: shell functions (``python3() { ... }``), a ``.pth``
file or ``sitecustomize`` under ``~/.local``, edited and committed tests, aliases, a ``git``
of its own. So the graded run uses none of them. The host reads the episode's library files
(every ``.py`` file of the task's repository outside ``tests/``) from the episode root itself,
never following a link (:mod:`agentworld.domains.terminal.safefs`), puts them over a pristine
checkout of the task's repository (its own tests, README and the rest as the task made them),
and runs the suite in a fresh sandbox of its own (a new
:class:`~agentworld.domains.terminal.env.TerminalEnv`: a new home holding only that tree, a bash
started by the host with no rc files) with ``python3 -I -S`` (no user site, no ``.pth``, no
``PYTHON*`` variables, no ``site`` at all: the runner needs only the standard library).

What is graded is the episode's diff of library files (:func:`library_diff`): files the agent
added anywhere, or changed outside the library, do not count. A library file that is missing,
not a regular file (a link, a fifo) or over :data:`FILE_LIMIT` bytes is graded as deleted.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from agentworld.core.types import Task
from agentworld.domains.swe import testlog
from agentworld.domains.swe.project import RUNNER
from agentworld.domains.swe.tools import script
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.limits import Limits
from agentworld.domains.terminal.safefs import lookup, open_root, read_regular

FILE_LIMIT = 1 << 20  # bytes of one library file read from the episode root
#: The graded run, in the home of the fresh sandbox.
GRADE_COMMAND = script(RUNNER, [], python="python3 -I -S")


def library_paths(pristine: dict[str, str]) -> list[str]:
    """The library files of a repository ``{path: text}``: its ``.py`` files outside
    ``tests/``, sorted."""
    return sorted(p for p in pristine if p.endswith(".py") and not p.startswith("tests/"))


def read_library(root: Path, paths: list[str]) -> dict[str, str | None]:
    """``{path: text}`` of each of ``paths`` in the episode root ``root`` (``None``: missing,
    not a regular file, a link on the way, or over :data:`FILE_LIMIT` bytes). Text is UTF-8,
    invalid bytes replaced."""
    out: dict[str, str | None] = dict.fromkeys(paths)
    try:
        root_fd = open_root(root)
    except OSError:
        return out
    try:
        for path in paths:
            with lookup(root_fd, tuple(path.split("/"))) as found:
                data = read_regular(*found, FILE_LIMIT) if found is not None else None
            out[path] = None if data is None else data.decode("utf-8", errors="replace")
    finally:
        os.close(root_fd)
    return out


def graded_tree(pristine: dict[str, str], library: dict[str, str | None]) -> dict[str, str]:
    """The pristine repository with the episode's library files in place (``None``: the file is
    left out)."""
    tree = {p: t for p, t in pristine.items() if p not in library}
    tree |= {p: t for p, t in library.items() if t is not None}
    return dict(sorted(tree.items()))


def library_diff(pristine: dict[str, str], library: dict[str, str | None]) -> str:
    """The unified diff (``a/``, ``b/`` paths, as ``git diff``) from the pristine library
    files to the episode's; ``""`` when they are the same."""
    parts = []
    for path, text in sorted(library.items()):
        before, after = pristine.get(path, ""), text or ""
        if before != after or text is None:
            parts += difflib.unified_diff(
                before.splitlines(keepends=True), after.splitlines(keepends=True),
                f"a/{path}", "/dev/null" if text is None else f"b/{path}",
            )  # fmt: skip
    return "".join(p if p.endswith("\n") else p + "\n" for p in parts)


class Grader:
    """Runs the task's suite on an episode's library files in a fresh sandbox.

    Args:
        limits: Limits of the grading sandbox (its command timeout bounds the suite).
        sandbox: Sandbox kind (default: the detected one).
        command: The graded run's shell command (default :data:`GRADE_COMMAND`; a user's
            repository: :meth:`~agentworld.domains.swe.user_repo.UserRepo.test_command`).
        library: The library files of a pristine repository (default
            :func:`library_paths`).
        ro_binds: Read-only binds of the grading sandbox (a user repository's test
            environment, :meth:`~agentworld.domains.swe.user_repo.UserRepo.binds`).
    """

    def __init__(self, limits: Limits, sandbox: str | None = None, command: str = GRADE_COMMAND,
                 library: Callable[[dict[str, str]], list[str]] | None = None,
                 ro_binds: tuple[tuple[str, str], ...] = ()) -> None:
        self.limits, self.sandbox, self.command = limits, sandbox, command
        self.ro_binds = ro_binds
        self.library = library or library_paths
        self._last: tuple[str, str] | None = None  # (hash of the graded tree, its log)

    def log(self, pristine: dict[str, str], root: Path) -> str:
        """The test log of the library files in episode root ``root`` over the ``pristine``
        repository; run again only when the graded tree changed.

        Raises:
            RuntimeError: no sandbox works here.
        """
        tree = graded_tree(pristine, read_library(root, self.library(pristine)))
        key = hashlib.sha256(json.dumps(tree, ensure_ascii=False).encode()).hexdigest()
        if self._last is None or self._last[0] != key:
            self._last = (key, run_suite(tree, self.limits, self.sandbox, self.command,
                                         self.ro_binds))
        return self._last[1]

    def outcomes(self, pristine: dict[str, str], root: Path) -> dict[str, bool]:
        """``{test id: passed}`` of :meth:`log`."""
        return testlog.outcomes(self.log(pristine, root))


def run_suite(tree: dict[str, str], limits: Limits, sandbox: str | None = None,
              command: str = GRADE_COMMAND, ro_binds: tuple[tuple[str, str], ...] = ()) -> str:
    """The test log of repository ``tree`` (``{path: text}``) run in a fresh sandbox with
    ``command`` (default :data:`GRADE_COMMAND`) and ``ro_binds`` (read-only binds, such as a
    user repository's test environment); the sandbox and its root are gone after.

    Raises:
        RuntimeError: no sandbox works here.
    """
    env = TerminalEnv(limits=limits, sandbox=sandbox, ro_binds=ro_binds)
    try:
        task = Task(id="swe-grading", domain="terminal", instruction="", setup={"files": tree})
        env.reset(options={"task": task})
        return env.run(command).output
    finally:
        env.close()


__all__ = ["FILE_LIMIT", "GRADE_COMMAND", "Grader", "graded_tree", "library_diff",
           "library_paths", "read_library", "run_suite"]
