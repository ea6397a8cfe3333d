"""The test environment of the user's repository: its declared dependencies in a venv, built
once on the host by the operator's ``--set repo=`` and mounted read-only in every sandbox.

What is installed is what the repository declares (:func:`declared`), read with ``tomllib``,
``configparser`` and :class:`packaging.requirements.Requirement`:

* ``pyproject.toml``: ``[project] dependencies``, the ``optional-dependencies`` and
  ``[dependency-groups]`` (PEP 735, ``include-group`` followed) named in :data:`TEST_SETS`; a
  requirement of the project itself (``name[test]``) stands for those extras;
* ``requirements*.txt`` in the root and ``requirements/*.txt`` but those of docs, linters,
  type checkers and releases (``requirements-mypy.txt``, ``requirements/docs.txt``; ``-r``
  followed within the repository; other options and ``-e`` lines skipped: the repository
  itself is never installed);
* ``setup.cfg``: ``[options] install_requires`` and ``[options.extras_require]`` test sets;
  ``tox.ini``: ``[testenv] deps`` lines that are plain requirements;
* ``pytest`` when the tests use it (:func:`uses_pytest`).

:func:`build_env` makes the venv with the ``uv`` the project runs under (``$UV``, else ``uv`` on
``PATH``): ``uv venv --relocatable --python /usr/bin/python3`` (the interpreter the sandbox
sees, its ``/usr`` being the host's) and ``uv pip install --only-binary :all:`` (wheels only:
no package's build script runs on the host), with ``--no-config`` (no ``uv.toml`` or
``[tool.uv]`` of the repository configures the host's installer). It is cached under
``cache_dir("swe-envs")`` by a hash of the requirements and the interpreter
(:func:`agentworld.core.cache.atomic_directory`: built whole or not at all). The repository's
own source goes on ``sys.path`` inside the sandbox, never installed.
"""

from __future__ import annotations

import atexit
import configparser
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agentworld.core.cache import atomic_directory, cache_dir
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

TEST_SETS = ("test", "tests", "testing", "dev")
PYTHON = "/usr/bin/python3"
VENV = "/opt/venv"  # the environment inside the sandbox
FORMAT = 1  # of a cached environment; bumped when how it is built changes
BUILD_TIMEOUT_S = 900
_PYTEST_IMPORT = re.compile(r"^\s*(?:import|from)\s+_?pytest\b", re.MULTILINE)
_PYTEST_FUNCTION = re.compile(r"^(?:async\s+)?def\s+test", re.MULTILINE)
#: requirements files of other tools than the tests (requirements-mypy.txt, requirements/docs.txt)
_NOT_TESTS = re.compile(r"doc|lint|mypy|typing|format|release|publish|bench", re.IGNORECASE)


class EnvError(ValueError):
    """The repository's declared dependencies cannot be read or installed (one line)."""


@dataclass(frozen=True)
class EnvSpec:
    """What a repository's test environment holds.

    Attributes:
        requirements: Requirement strings (normalised by :mod:`packaging`), sorted.
        pytest: Whether the tests run with pytest (else :mod:`unittest`).
    """

    requirements: tuple[str, ...]
    pytest: bool

    @property
    def key(self) -> str:
        """Cache key: a hash of the requirements, the interpreter and :data:`FORMAT`."""
        body = json.dumps([FORMAT, os.path.realpath(PYTHON), _python_version(),
                           list(self.requirements)])
        return hashlib.sha256(body.encode()).hexdigest()[:20]


@functools.cache
def _python_version() -> str:
    done = subprocess.run([PYTHON, "-c", "import sys; print(sys.version)"], capture_output=True,
                          text=True, timeout=30, check=False)
    return done.stdout.strip()


def _requirement(text: str, source: str) -> Requirement:
    try:
        req = Requirement(text)
    except InvalidRequirement as error:
        raise EnvError(f"{source}: invalid requirement {text!r} ({error})") from None
    if req.url:
        raise EnvError(f"{source}: requirement {text!r} names a URL; only requirements from "
                       "the package index are installed (as wheels)")
    return req


def _requirements_file(files: dict[str, str], path: str, seen: set[str]) -> list[tuple[str, str]]:
    """``(requirement text, source)`` of a pip requirements file, ``-r`` followed."""
    if path in seen or path not in files:
        return []
    seen.add(path)
    out = []
    text = re.sub(r"\\\n", "", files[path])
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        option = re.match(r"^(-r|--requirement)[\s=]*(\S+)$", line)
        if option:
            target = os.path.normpath(str(PurePosixPath(path).parent / option.group(2)))
            out += _requirements_file(files, target, seen)
        elif not line.startswith("-"):  # -e ., -c, --index-url: not requirements
            out.append((line, path))
    return out


def _pyproject(files: dict[str, str]) -> tuple[str, list[tuple[str, str]], dict[str, list[str]]]:
    """``(project name, [(requirement, source)], {extra: requirements})`` of pyproject.toml."""
    if "pyproject.toml" not in files:
        return "", [], {}
    try:
        data = tomllib.loads(files["pyproject.toml"])
    except tomllib.TOMLDecodeError as error:
        raise EnvError(f"pyproject.toml is not valid TOML ({error})") from None
    project = data.get("project", {})
    extras = {str(k): [str(r) for r in v] for k, v in project.get("optional-dependencies",
                                                                     {}).items()}
    out = [(str(r), "pyproject.toml [project] dependencies")
           for r in project.get("dependencies", [])]
    for name in TEST_SETS:
        out += [(r, f"pyproject.toml optional-dependencies {name}") for r in extras.get(name, [])]
    groups = data.get("dependency-groups", {})

    def group(name: str, depth: int = 0) -> list[str]:
        items = []
        for item in groups.get(name, []) if depth < 8 else []:
            if isinstance(item, dict) and "include-group" in item:
                items += group(str(item["include-group"]), depth + 1)
            elif isinstance(item, str):
                items.append(item)
        return items

    for name in TEST_SETS:
        out += [(r, f"pyproject.toml dependency-groups {name}") for r in group(name)]
    return str(project.get("name", "")), out, extras


def _ini(files: dict[str, str], path: str) -> configparser.ConfigParser | None:
    if path not in files:
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(files[path])
    except configparser.Error:
        return None
    return parser


def _ini_requirements(files: dict[str, str]) -> list[tuple[str, str]]:
    """Requirements of ``setup.cfg`` and ``tox.ini`` (plain requirement lines only)."""
    out: list[tuple[str, str]] = []
    cfg = _ini(files, "setup.cfg")
    if cfg is not None:
        lines = cfg.get("options", "install_requires", fallback="").splitlines()
        for name in TEST_SETS:
            lines += cfg.get("options.extras_require", name, fallback="").splitlines()
        out += [(line.strip(), "setup.cfg") for line in lines if line.strip()]
    tox = _ini(files, "tox.ini")
    if tox is not None:
        for line in tox.get("testenv", "deps", fallback="").splitlines():
            line = line.strip()
            option = re.match(r"^(-r|--requirement)[\s=]*(\S+)$", line)
            if option and "{" not in line:
                out += _requirements_file(files, os.path.normpath(option.group(2)), set())
            elif line and not line.startswith("-") and "{" not in line and ":" not in line:
                out.append((line, "tox.ini [testenv] deps"))
    return out


def uses_pytest(files: dict[str, str], tests: list[str]) -> bool:
    """Whether the tests need pytest: a ``conftest.py``, pytest's configuration
    (``pytest.ini``, ``[tool.pytest.ini_options]``, ``[tool:pytest]``, tox's ``[pytest]``),
    a test module importing ``pytest`` or holding module-level ``test`` functions (which
    :mod:`unittest` does not collect). ``tests``: the test modules' paths."""
    if any(PurePosixPath(p).name in ("conftest.py", "pytest.ini") for p in files):
        return True
    if "[tool.pytest" in files.get("pyproject.toml", ""):
        return True
    if "[tool:pytest]" in files.get("setup.cfg", "") or "[pytest]" in files.get("tox.ini", ""):
        return True
    return any(_PYTEST_IMPORT.search(files[p]) or _PYTEST_FUNCTION.search(files[p])
               for p in tests)


def declared(files: dict[str, str], tests: list[str]) -> EnvSpec | None:
    """The repository's test environment (see the module docstring), ``None`` when it
    declares no dependency and its tests run with :mod:`unittest` (the sandbox's bare
    ``python3`` runs them).

    Raises:
        EnvError: an invalid requirement (the message names its file), or one naming a URL.
    """
    name, found, extras = _pyproject(files)
    for path in sorted(files):
        parts = PurePosixPath(path).parts
        if ((len(parts) == 1 and re.fullmatch(r"requirements.*\.txt", path)) or (
                len(parts) == 2 and parts[0] == "requirements" and path.endswith(".txt"))) \
                and not _NOT_TESTS.search(parts[-1]):
            found += _requirements_file(files, path, set())
    found += _ini_requirements(files)
    own = canonicalize_name(name) if name else None
    reqs: dict[str, Requirement] = {}
    queue = list(found)
    while queue:
        text, source = queue.pop(0)
        req = _requirement(text, source)
        if own is not None and canonicalize_name(req.name) == own:
            for extra in sorted(req.extras):  # the project itself: its extras' requirements
                queue += [(r, f"pyproject.toml optional-dependencies {extra}")
                          for r in extras.pop(extra, [])]
            continue
        reqs.setdefault(str(req), req)
    pytest = uses_pytest(files, tests) or any(canonicalize_name(r.name) == "pytest"
                                              for r in reqs.values())
    if pytest and not any(canonicalize_name(r.name) == "pytest" for r in reqs.values()):
        reqs["pytest"] = Requirement("pytest")
    if not reqs:
        return None
    return EnvSpec(tuple(sorted(reqs)), pytest)


def uv_binary() -> str:
    """The ``uv`` this process runs under (``$UV``, set by ``uv run``), else ``uv`` on PATH.

    Raises:
        EnvError: none found.
    """
    found = os.environ.get("UV") or shutil.which("uv")
    if not found or not os.access(found, os.X_OK):
        raise EnvError("uv is not found (neither $UV nor uv on PATH); install uv "
                       "(https://docs.astral.sh/uv/) to build the repository's test environment")
    return found


def _failure(spec: EnvSpec, stderr: str) -> str:
    """One line naming the requirement uv could not install, from uv's message."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    cause = next((line.removeprefix("cause:").strip() for line in lines
                  if line.startswith(("cause:", "╰─▶", "Because"))),
                 lines[-1] if lines else "")
    cause = cause.removeprefix("╰─▶").strip()
    words = {canonicalize_name(w) for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*", cause)}
    failed = [r for r in spec.requirements if canonicalize_name(Requirement(r).name) in words]
    which = f"requirement {failed[0]!r}" if failed else "its requirements"
    return (f"{which} could not be installed as a wheel (uv pip install --only-binary :all:): "
            f"{cause}")


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False,
                              timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise EnvError(f"{' '.join(argv[:3])} ran over {BUILD_TIMEOUT_S} s") from None


def build_env(spec: EnvSpec, root: str | os.PathLike[str] | None = None) -> Path:
    """The venv of ``spec`` (its folder on the host), built when not cached.

    Args:
        spec: What to install.
        root: Cache root (default :func:`agentworld.core.cache.cache_root`).

    Raises:
        EnvError: uv is missing, or a requirement has no wheel for this interpreter or cannot
            be resolved (the message names it and gives uv's reason).
    """
    final = cache_dir("swe-envs", root=root) / spec.key
    if (final / "env.json").is_file():
        return final / "venv"
    if not os.access(PYTHON, os.X_OK):
        raise EnvError(f"{PYTHON} is not found: the sandbox runs the tests with it")
    uv = uv_binary()
    with atomic_directory(final) as work:
        (work / "requirements.txt").write_text("".join(f"{r}\n" for r in spec.requirements))
        done = _run([uv, "venv", "--no-config", "--quiet", "--relocatable", "--python", PYTHON,
                     str(work / "venv")], work)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["exit status " + str(done.returncode)])
            raise EnvError(f"uv venv --python {PYTHON} failed: {last[-1]}")
        done = _run([uv, "pip", "install", "--no-config", "--quiet", "--python",
                     str(work / "venv" / "bin" / "python"), "--only-binary", ":all:",
                     "--compile-bytecode", "--link-mode", "copy", "-r",
                     str(work / "requirements.txt")], work)
        if done.returncode != 0:
            raise EnvError(_failure(spec, done.stderr))
        (work / "venv" / ".lock").unlink(missing_ok=True)  # uv's lock file, mode 0666
        (work / "env.json").write_text(json.dumps({"requirements": list(spec.requirements),
                                                   "pytest": spec.pytest}, indent=1))
    return final / "venv"


def _link_or_copy(source: str, dest: str) -> None:
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)


@functools.cache
def _staged(venv: Path, pid: int) -> Path:
    from agentworld.domains.terminal.hostfiles import private_dir
    from agentworld.domains.terminal.roots import session_dir

    holder = private_dir(session_dir(), "agentworld-venv-", 0o711)
    shutil.copytree(venv, holder / "venv", symlinks=True, copy_function=_link_or_copy)
    atexit.register(shutil.rmtree, holder, True)
    return holder / "venv"


def sandbox_view(venv: Path) -> Path:
    """The host folder to bind at :data:`VENV` for ``venv``: itself, or for a root caller
    (whose sandboxes run as uids that cannot pass the private cache's folders) a copy of it
    (hard links where the file system allows) in this process's 0711 session folder of the
    terminal domain (:func:`agentworld.domains.terminal.roots.session_dir`), made once per
    process and removed at exit."""
    if os.geteuid() != 0:
        return venv
    return _staged(venv, os.getpid())
