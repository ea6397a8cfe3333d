"""The repositories of the swe tasks, two small pure-Python libraries written for this
project, each with a ``unittest`` suite, shipped as package data:

* ``textkit`` (``project/``): statistics, string and calendar helpers, ~220 lines, 32 tests;
* ``ledger`` (``projects/ledger/``): amounts in cents, accounts with an overdraft and spending
  reports, ~150 lines, 24 tests.

The sandbox sees the host's ``/usr`` read-only; its ``python3`` has no ``pytest``, so the suites
are plain ``unittest`` and :data:`RUNNER` runs them. :data:`EDITOR` is the ``str_replace_editor``
tool; both run inside the sandbox as ``python3 -`` scripts. :data:`PROJECT` and
:data:`MODULES` are the first project's (``textkit``), kept for callers of one project.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
HOME = "/home/agent"
GITIGNORE = "__pycache__/\n*.pyc\n"
RUNNER = (HERE / "scripts" / "runner.py").read_text(encoding="utf-8")
EDITOR = (HERE / "scripts" / "editor.py").read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class Project:
    """One task repository.

    Attributes:
        name: Its name, also its package directory.
        summary: The README's one-line description.
        modules: The modules bugs are injected into (paths relative to the repository root).
        root: Where its files are shipped.
    """

    name: str
    summary: str
    modules: tuple[str, ...]
    root: Path

    @property
    def readme(self) -> str:
        return (f"# {self.name}\n\n{self.summary}\n\n"
                "Run the tests with `python3 -m unittest` in this directory.\n")


PROJECTS: dict[str, Project] = {
    "textkit": Project("textkit", "Small text, statistics and date helpers.",
                       ("textkit/stats.py", "textkit/text.py", "textkit/dates.py"),
                       HERE / "project"),
    "ledger": Project("ledger", "Amounts in cents, accounts and spending reports.",
                      ("ledger/money.py", "ledger/accounts.py", "ledger/report.py"),
                      HERE / "projects" / "ledger"),
}
PROJECT = "textkit"
MODULES: tuple[str, ...] = PROJECTS[PROJECT].modules
README = PROJECTS[PROJECT].readme


def get_project(name: str) -> Project:
    """The project called ``name``.

    Raises:
        ValueError: no such project (the message lists them).
    """
    if name not in PROJECTS:
        raise ValueError(f"unknown swe project {name!r}; valid: {', '.join(PROJECTS)}")
    return PROJECTS[name]


def project_of(path: str) -> str:
    """The project whose modules include ``path`` (relative), else the first project."""
    return next((p.name for p in PROJECTS.values() if path in p.modules), PROJECT)


@functools.cache
def _files(name: str) -> tuple[tuple[str, str], ...]:
    project = get_project(name)
    found = sorted(p for p in project.root.rglob("*.py") if "__pycache__" not in p.parts)
    files = [(p.relative_to(project.root).as_posix(), p.read_text(encoding="utf-8"))
             for p in found]
    return (*files, (".gitignore", GITIGNORE), ("README.md", project.readme))


def project_files(name: str = PROJECT) -> dict[str, str]:
    """``{relative path: text}`` of the clean repository of project ``name`` (library, tests,
    README, .gitignore).

    Raises:
        ValueError: an unknown project.
    """
    return dict(_files(name))


def suite_files(name: str = PROJECT) -> list[str]:
    """Relative paths of the test modules (``tests/test_*.py``) of project ``name``."""
    return [p for p in project_files(name) if p.startswith("tests/test_")]
