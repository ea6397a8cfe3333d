"""The user's own repository as the swe domain's project (``--set repo=PATH``, ``--set test_cmd=``).

:class:`UserRepo` reads a git repository of a Python project: its tracked text files (``git
ls-files``; the working tree's content) and the git-ignored modules a build generated in its
packages (``_version.py``), its library modules (``.py`` files outside test
folders, test modules, ``conftest.py`` and ``setup.py``) that mutations may change, and the
command that runs its tests inside the sandbox, in the repository root:

* default, a repository that declares no dependency and whose tests are plain ``unittest``:
  Python's ``unittest`` discovery (:data:`~agentworld.domains.swe.project.RUNNER`, started in
  ``tests/`` or ``test/`` when there is one, else in the root; ``src/`` is put on the path for
  a src layout), run as ``python3 -I -S`` when grading, as for the built-in projects, with the
  sandbox's bare ``python3`` (the host's ``/usr/bin/python3``);
* default, a repository that declares dependencies or whose tests use pytest: its test
  environment (:mod:`agentworld.domains.swe.user_env`: a venv of its declared requirements,
  built once on the host, bound read-only at ``/opt/venv`` in every sandbox), its python
  running ``pytest -v`` (``scripts/pytest_runner.py``) or the ``unittest`` runner, as
  ``/opt/venv/bin/python -I -B`` when grading (``-I``: no user site, no ``PYTHON*``
  variables, no current folder on the path; ``site`` reads only the read-only venv);
* ``test_cmd``: the user's command line, run as given inside the sandbox (with the
  environment's ``bin`` first on ``PATH`` and the source on ``PYTHONPATH`` when there is
  one); its log is read in unittest's verbose format or ``pytest -v``'s
  (``path::test PASSED``).

:func:`check_repo` tells an unusable repository in one line before any file is written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agentworld.domains.swe.project import HERE, HOME, RUNNER
from agentworld.domains.swe.tools import script
from agentworld.domains.swe.user_env import (
    VENV,
    EnvError,
    EnvSpec,
    build_env,
    declared,
    sandbox_view,
)
from agentworld.domains.terminal.limits import Limits

PYTEST_RUNNER = (HERE / "scripts" / "pytest_runner.py").read_text(encoding="utf-8")

FILE_LIMIT = 256 << 10  # bytes of one file copied into the episode
SUITE_LOG_BYTES = 8 << 20  # bytes of a graded run's log the host reads (the agent sees less)
SUITE_TIMEOUT_S = 300  # seconds (wall clock and CPU) of the clean repository's run of its suite
# A mutated repository's run (task sampling, grading) gets SUITE_FACTOR times the clean run's
# wall time, at least SUITE_MIN_S and at most the clean run's own limit: a mutation that makes the
# suite hang costs seconds, not SUITE_TIMEOUT_S (cachetools: 36 min for 40 episodes).
SUITE_FACTOR = 10.0
SUITE_MIN_S = 30.0
TOTAL_LIMIT = 8 << 20  # bytes of all the files copied into the episode
TEST_DIRS = ("tests", "test", "testing")


class RepoError(ValueError):
    """A ``repo`` option that names no usable repository (one line)."""


def _is_test(path: str) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1]
    return (any(p in TEST_DIRS for p in parts[:-1]) or name.startswith("test_")
            or name.endswith("_test.py") or name in ("conftest.py", "setup.py"))


def _git_files(root: Path, *args: str) -> list[str]:
    try:
        done = subprocess.run(["git", "-C", str(root), "ls-files", "-z", *args],
                              capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        raise RepoError(f"repo {str(root)!r} is not a git repository (git ls-files failed); "
                        "give the root of a git checkout of a Python project") from None
    return sorted(p for p in done.stdout.decode("utf-8", "replace").split("\0") if p)


def _generated(root: Path, tracked: list[str]) -> list[str]:
    """Git-ignored Python modules in the folders of tracked library modules (not the root):
    what a build writes into the package and the code imports (setuptools-scm's
    ``_version.py``). They are copied into the episode, never mutated."""
    packages = {str(PurePosixPath(p).parent) for p in tracked
                if p.endswith(".py") and not _is_test(p)} - {"."}
    return [p for p in _git_files(root, "--others", "--ignored", "--exclude-standard")
            if p.endswith(".py") and str(PurePosixPath(p).parent) in packages
            and not _is_test(p)]


@dataclass(frozen=True)
class UserRepo:
    """A user's repository, read once.

    Attributes:
        root: The repository's folder.
        name: Its folder's name.
        files: ``{relative path: text}`` of its tracked text files, and of the git-ignored
            modules a build generated in its packages (:func:`_generated`).
        modules: Its library modules (relative paths), the mutation targets.
        test_cmd: The user's test command (``None``: unittest discovery).
        env: Its test environment (:func:`~agentworld.domains.swe.user_env.declared`;
            ``None``: the sandbox's bare ``python3`` runs its tests).
    """

    root: Path
    name: str
    files: dict[str, str]
    modules: tuple[str, ...]
    test_cmd: str | None
    env: EnvSpec | None = None

    @classmethod
    def read(cls, root: Path | str, test_cmd: str | None = None) -> UserRepo:
        """The repository at ``root``.

        Raises:
            RepoError: not a folder or a git repository, no library module, no test found
                (without ``test_cmd``), over :data:`TOTAL_LIMIT` bytes, or a declared
                requirement that is invalid or names a URL.
        """
        root = Path(root).resolve()
        if not root.is_dir():
            raise RepoError(f"repo {str(root)!r} is not a folder")
        files: dict[str, str] = {}
        total = 0
        tracked = _git_files(root)
        generated = _generated(root, tracked)
        for rel in sorted(tracked + generated):
            path = root / rel
            if path.is_symlink() or not path.is_file() or path.stat().st_size > FILE_LIMIT:
                continue
            data = path.read_bytes()
            if b"\0" in data:
                continue  # binary
            total += len(data)
            if total > TOTAL_LIMIT:
                raise RepoError(f"repo {str(root)!r} holds over {TOTAL_LIMIT >> 20} MiB of "
                                "tracked text files; give a smaller repository")
            files[rel] = data.decode("utf-8", errors="replace")
        modules = tuple(p for p in files
                        if p.endswith(".py") and not _is_test(p) and p not in generated)
        if not modules:
            raise RepoError(f"repo {str(root)!r} has no tracked Python module outside its tests")
        if test_cmd is None and not any(p.endswith(".py") and _is_test(p)
                                        and PurePosixPath(p).name.startswith("test")
                                        for p in files):
            raise RepoError(f"repo {str(root)!r} has no tests (no tracked test_*.py): "
                            "give test_cmd= or add tests")
        tests = [p for p in files if p.endswith(".py") and _is_test(p)]
        try:
            env = declared(files, tests)
        except EnvError as error:
            raise RepoError(f"repo {str(root)!r}: {error}") from None
        return cls(root, root.name, files, modules, test_cmd, env)

    def binds(self) -> tuple[tuple[str, str], ...]:
        """The sandbox's read-only binds: ``((host folder, /opt/venv),)`` of the test
        environment, built (once, cached) on first use; ``()`` without one.

        Raises:
            RepoError: the environment cannot be built (names the requirement that failed).
        """
        if self.env is None:
            return ()
        try:
            return ((str(sandbox_view(build_env(self.env))), VENV),)
        except EnvError as error:
            raise RepoError(f"repo {str(self.root)!r}: {error}") from None

    @property
    def source_paths(self) -> list[str]:
        """Folders of the repository's importable source, relative: ``src`` (a src layout)
        and the root."""
        return [*(["src"] if any(p.startswith("src/") for p in self.modules) else []), "."]

    def shell_setup(self) -> str:
        """Shell exports giving the agent's shell the test environment (``""``: none)."""
        if self.env is None:
            return ""
        path = ":".join(HOME if p == "." else f"{HOME}/{p}" for p in self.source_paths)
        return f"export VIRTUAL_ENV={VENV} PATH={VENV}/bin:$PATH PYTHONPATH={path}"

    @property
    def digest(self) -> str:
        """A short hash of the files (tasks of another version are refused)."""
        h = hashlib.sha256()
        for rel, text in sorted(self.files.items()):
            h.update(f"{rel}\0{text}\0".encode())
        return h.hexdigest()[:16]

    def runner(self) -> str:
        """:data:`RUNNER` started in the repository's test folder, ``src/`` on the path, the
        tests' own output buffered."""
        start = next((d for d in TEST_DIRS if any(p.startswith(d + "/") for p in self.files)),
                     ".")
        package = start == "." or f"{start}/__init__.py" in self.files
        top = "." if package else start  # a folder of test modules without __init__.py
        source = RUNNER.replace('loader.discover("tests", top_level_dir=".")',
                                f'loader.discover({start!r}, top_level_dir={top!r})')
        # the tests' own output is shown only for a failing test (a chatty suite's verbose
        # lines would be cut at the sandbox's output limit)
        source = source.replace("verbosity=2, resultclass=_Result", "verbosity=2, buffer=True, "
                                "resultclass=_Result")
        if any(p.startswith("src/") for p in self.modules):
            source = source.replace('sys.path.insert(0, ".")',
                                    'sys.path.insert(0, "src"); sys.path.insert(0, ".")')
        return source

    def test_command(self, tests: list[str] | None = None, grading: bool = False) -> str:
        """The shell command running the tests (``tests``: only those, with the default
        runner) in the current folder; ``grading``: as ``python3 -I -S``, or with a test
        environment as ``/opt/venv/bin/python -I -B``."""
        if self.test_cmd is not None:
            setup = self.shell_setup()
            return f"{setup}; {self.test_cmd}" if setup else self.test_cmd
        if self.env is None:
            return script(self.runner(), tests or [],
                          python="python3 -I -S" if grading else "python3")
        python = f"{VENV}/bin/python {'-I ' if grading else ''}-B"
        if not self.env.pytest:
            return script(self.runner(), tests or [], python=python)
        source = PYTEST_RUNNER
        if "src" in self.source_paths:
            source = source.replace('sys.path.insert(0, ".")',
                                    'sys.path.insert(0, "src"); sys.path.insert(0, ".")')
        return script(source, tests or [], python=python)

    def library(self, path: str) -> bool:
        """Whether ``path`` is one of the library modules."""
        return path in self.modules


def suite_limits(limits: Limits, timeout_s: float | None = None) -> Limits:
    """``limits`` for the host's own runs of a user's whole suite (grading, task sampling):
    at least :data:`SUITE_LOG_BYTES` of log (a suite of 900 tests writes over the agent's
    64 KiB, and a test missing from the log counts as failing) and ``timeout_s`` seconds of
    wall-clock and CPU time (default: the larger of ``limits``' command timeout and
    :data:`SUITE_TIMEOUT_S`, the clean run's limit; a mutated run: :func:`suite_budget`)."""
    if timeout_s is None:
        timeout_s = max(limits.command_timeout_s, SUITE_TIMEOUT_S)
    return dataclasses.replace(
        limits, output_bytes=max(limits.output_bytes, SUITE_LOG_BYTES),
        command_timeout_s=timeout_s, cpu_s=max(limits.cpu_s, math.ceil(timeout_s)))


def suite_budget(clean_s: float, limits: Limits) -> float:
    """Seconds a mutated repository's suite run gets when the clean one took ``clean_s``
    seconds (wall clock, sandbox start included): :data:`SUITE_FACTOR` times that, at least
    :data:`SUITE_MIN_S`, at most the clean run's own limit (:func:`suite_limits`), rounded
    up to a tenth of a second."""
    cap = suite_limits(limits).command_timeout_s
    return min(cap, max(SUITE_MIN_S, math.ceil(SUITE_FACTOR * clean_s * 10) / 10))


def task_budget(setup: dict, limits: Limits) -> float:
    """A task's suite budget, ``setup["suite_timeout_s"]`` (seconds; tasks made before it was
    recorded: the clean run's limit).

    Raises:
        ValueError: it is not a number in ``(0, the clean run's limit]``.
    """
    cap = suite_limits(limits).command_timeout_s
    budget = setup.get("suite_timeout_s", cap)
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not 0 < budget <= cap:
        raise ValueError(f"task setup['suite_timeout_s'] must be seconds in (0, {cap:g}], "
                         f"got {budget!r:.40}")
    return float(budget)


def check_repo(root: Path, test_cmd: str | None = None) -> Path:
    """``root`` resolved once :meth:`UserRepo.read` accepts it.

    Raises:
        RepoError: see :meth:`UserRepo.read`.
    """
    return UserRepo.read(root, test_cmd).root
