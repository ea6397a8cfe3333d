"""Seeded bug-fixing tasks: a project's repository (``textkit`` or ``ledger``,
:mod:`agentworld.domains.swe.project`) with one injected bug.

A task instance is, as in SWE-smith (Yang et al. 2025), the buggy repository (the clean
project with one :mod:`~agentworld.domains.swe.mutations` mutation), the tests the bug makes
fail (``FAIL_TO_PASS``), the tests that still pass (``PASS_TO_PASS``) and an issue-like
description of the failing behaviour. A mutation is kept only when at least one test fails
with it: each candidate's suite is run once on the host (our own code, never the agent's, in
a private ``mkdtemp`` directory, 10 s limit) and the outcome is cached per process.

``Task.setup`` = ``{"project": NAME, "mutation": Mutation.to_dict()}`` (the environment
rebuilds the files from it); ``Task.check`` = ``{"fail_to_pass": [ids], "pass_to_pass":
[ids]}``; ``Task.kind`` is the mutation operator.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from agentworld.core.types import Task
from agentworld.domains.swe import testlog
from agentworld.domains.swe.mutations import OPERATORS, Mutation, apply, candidates
from agentworld.domains.swe.project import (
    HOME,
    PROJECT,
    PROJECTS,
    RUNNER,
    get_project,
    project_files,
    project_of,
)

KINDS: tuple[str, ...] = OPERATORS
HOST_TIMEOUT_S = 10.0
_RUNS: dict[Mutation, tuple[dict[str, bool], dict[str, str]] | None] = {}


def repo_files(mutation: Mutation | dict[str, Any] | None, project: str | None = None
               ) -> dict[str, str]:
    """The task repository's files: ``project`` (default: the one whose module the mutation
    changes, else ``textkit``) with ``mutation`` applied (clean without).

    Raises:
        ValueError: an unknown project, or the mutation does not fit the project (unknown
            file, other line).
    """
    m = mutation if isinstance(mutation, Mutation) or mutation is None else Mutation(**mutation)
    name = project or (project_of(m.file) if m is not None else PROJECT)
    files = project_files(name)
    if m is None:
        return files
    if m.file not in get_project(name).modules:
        raise ValueError(f"mutation of unknown file {m.file!r}; valid: "
                         f"{', '.join(get_project(name).modules)}")
    files[m.file] = apply(files[m.file], m)
    return files


def run_on_host(files: dict[str, str]) -> str:
    """The test log of ``files`` run on the host (a private temporary copy, deleted after).

    Raises:
        subprocess.TimeoutExpired: the suite ran past :data:`HOST_TIMEOUT_S`.
    """
    root = Path(tempfile.mkdtemp(prefix="agentworld-swe-"))
    try:
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        done = subprocess.run([sys.executable, "-"], input=RUNNER, text=True, cwd=root,
                              capture_output=True, timeout=HOST_TIMEOUT_S,
                              env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})
        return done.stdout
    finally:
        shutil.rmtree(root, ignore_errors=True)


def evaluate(mutation: Mutation) -> tuple[dict[str, bool], dict[str, str]] | None:
    """``(outcomes, errors)`` of the suite with ``mutation`` (cached), ``None`` when it hangs."""
    if mutation not in _RUNS:
        try:
            log = run_on_host(repo_files(mutation))
            _RUNS[mutation] = (testlog.outcomes(log), testlog.errors(log))
        except subprocess.TimeoutExpired:
            _RUNS[mutation] = None
    return _RUNS[mutation]


def _docstring(test_id: str, project: str = PROJECT) -> str:
    """The first docstring line of a test of ``project``'s suite (by id), else ``""``."""
    parts = test_id.split(".")
    module, method = ".".join(parts[:-2]), parts[-1]
    text = project_files(project).get(module.replace(".", "/") + ".py", "")
    at = text.find(f"def {method}(self):")
    if at < 0:
        return ""
    rest = text[at:].split("\n", 2)
    line = rest[1].strip() if len(rest) > 1 else ""
    return line.strip('"') if line.startswith('"""') else ""


def issue_text(failing: list[str], errors: dict[str, str], project: str = PROJECT) -> str:
    """An issue-like description of the failing behaviour: what the first failing test
    expects, the failure it shows, and every failing test."""
    first = failing[0]
    expected = _docstring(first, project).rstrip(".") or f"{first} should pass"
    error = errors.get(first, "")
    listed = "\n".join(f"- {t}" for t in failing)
    return (f"Bug in {project}: {expected} no longer holds.\n\n"
            f"Running the test suite (`python3 -m unittest`) in {HOME} fails:\n\n"
            f"{first}\n{error}\n\nFailing tests:\n{listed}\n\n"
            f"Fix the library code in {HOME} so that these tests pass and every other test keeps "
            "passing. The tests are correct; do not change them. Tools: bash, "
            "str_replace_editor, run_tests, submit.")


class SweTaskSampler:
    """Seeded bug-fixing tasks, one mutation operator per kind.

    Args:
        kinds: Task kinds to draw, in turn (default all of :data:`KINDS`).
        projects: Projects to draw from, in turn (default all of
            :data:`~agentworld.domains.swe.project.PROJECTS`).

    Raises:
        ValueError: an unknown or empty kind or project list.
    """

    def __init__(self, kinds: tuple[str, ...] | list[str] = KINDS,
                 projects: tuple[str, ...] | list[str] = tuple(PROJECTS)) -> None:
        unknown = [k for k in kinds if k not in KINDS]
        if unknown or not kinds:
            raise ValueError(f"unknown task kinds {unknown or kinds}; valid: {', '.join(KINDS)}")
        wrong = [p for p in projects if p not in PROJECTS]
        if wrong or not projects:
            raise ValueError(f"unknown swe projects {wrong or projects}; valid: "
                             f"{', '.join(PROJECTS)}")
        self.kinds, self.projects = tuple(kinds), tuple(projects)

    def sample(self, n: int, *, seed: int) -> list[Task]:
        """``n`` tasks drawn with ``random.Random(seed)`` (same seed, same tasks); kinds in turn
        from a seeded offset, projects in turn.

        Raises:
            ValueError: ``n`` is negative.
            RuntimeError: no mutation of a kind makes a test fail (cannot happen with the
                shipped project).
        """
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        rng = random.Random(seed)
        offset = rng.randrange(len(self.kinds))
        return [self.task(self.kinds[(offset + i) % len(self.kinds)], rng, f"swe-{seed}-{i}",
                          self.projects[i % len(self.projects)]) for i in range(n)]

    def task(self, kind: str, rng: random.Random, task_id: str, project: str = PROJECT) -> Task:
        """One task of ``kind`` in ``project``: the first candidate mutation, in ``rng``'s
        order, that makes at least one test fail and none hang."""
        files = project_files(project)
        pool = [m for f in get_project(project).modules for m in candidates(f, files[f], kind)]
        rng.shuffle(pool)
        for mutation in pool:
            result = evaluate(mutation)
            if result is None or all(result[0].values()) or not result[0]:
                continue
            outcomes, errors = result
            failing = sorted(t for t, ok in outcomes.items() if not ok)
            return Task(id=f"{task_id}-{kind}", domain="swe", kind=kind,
                        instruction=issue_text(failing, errors, project),
                        setup={"project": project, "mutation": mutation.to_dict()},
                        check={"fail_to_pass": failing,
                               "pass_to_pass": sorted(t for t, ok in outcomes.items() if ok)})
        raise RuntimeError(f"no {kind} mutation of {project} makes a test fail")
