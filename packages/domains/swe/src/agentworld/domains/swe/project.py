"""The repository of the swe tasks: ``textkit``, a small pure-Python library written for this
project (statistics, string and calendar helpers, ~220 lines) with a ``unittest`` suite of 32
tests, shipped as package data under ``project/``.

The sandbox sees the host's ``/usr`` read-only; its ``python3`` has no ``pytest``, so the suite
is plain ``unittest`` and :data:`RUNNER` runs it. :data:`EDITOR` is the ``str_replace_editor``
tool; both run inside the sandbox as ``python3 -`` scripts.
"""

from __future__ import annotations

import functools
from pathlib import Path

HERE = Path(__file__).parent
PROJECT = "textkit"
HOME = "/home/agent"
#: The modules bugs are injected into (paths relative to the repository root).
MODULES: tuple[str, ...] = ("textkit/stats.py", "textkit/text.py", "textkit/dates.py")
GITIGNORE = "__pycache__/\n*.pyc\n"
README = ("# textkit\n\nSmall text, statistics and date helpers.\n\n"
          "Run the tests with `python3 -m unittest` in this directory.\n")
RUNNER = (HERE / "scripts" / "runner.py").read_text(encoding="utf-8")
EDITOR = (HERE / "scripts" / "editor.py").read_text(encoding="utf-8")


@functools.cache
def _files() -> tuple[tuple[str, str], ...]:
    root = HERE / "project"
    found = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    files = [(p.relative_to(root).as_posix(), p.read_text(encoding="utf-8")) for p in found]
    return (*files, (".gitignore", GITIGNORE), ("README.md", README))


def project_files() -> dict[str, str]:
    """``{relative path: text}`` of the clean repository (library, tests, README, .gitignore)."""
    return dict(_files())


def suite_files() -> list[str]:
    """Relative paths of the test modules (``tests/test_*.py``)."""
    return [p for p in project_files() if p.startswith("tests/test_")]
