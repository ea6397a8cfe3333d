"""Run Python code or the ``agentworld`` CLI as an ordinary local user, with nothing set.

Tests of what an ordinary user meets (issue 43 item 5, issue 46 item 1) run the real program
in a subprocess with a clean environment: ``PATH=/usr/local/bin:/usr/bin:/bin`` (no
``/usr/sbin``, as Debian gives a user), ``HOME``, ``LANG``, and no ``AGENTWORLD_*`` variable.
When the tests run as root, the program runs as the local user with uid 1000 (``runuser``) on
the system's Python 3 with this virtual environment's packages (the venv's own interpreter may
sit under ``/root``); otherwise as the caller. :data:`SKIP` says why it cannot run here, or is
``None``.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

USER_PATH = "/usr/local/bin:/usr/bin:/bin"
SITE = sysconfig.get_paths()["purelib"]
BOOT = (
    "import site, sys; site.addsitedir(sys.argv[1]); sys.argv = sys.argv[2:]; "
    "exec(compile(sys.argv[0], '<as_user>', 'exec')) if sys.argv[0] != 'agentworld' "
    "else __import__('agentworld.app.cli', fromlist=['main']).main()"
)


def _user() -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid())
    try:
        return pwd.getpwuid(1000)
    except KeyError:
        return None


def _python() -> str | None:
    """An interpreter the user can run with this venv's packages (same minor version)."""
    if os.geteuid() != 0:
        return sys.executable
    system = "/usr/bin/python3"
    if not os.access(system, os.X_OK):
        return None
    done = subprocess.run([system, "-c", "import sys; print(sys.version_info[:2])"],
                          capture_output=True, text=True, check=False)
    return system if done.stdout.strip() == str(sys.version_info[:2]) else None


def _why_not() -> str | None:
    user, python = _user(), _python()
    if user is None:
        return "no local user with uid 1000 to run as"
    if python is None:
        return f"no system Python {sys.version_info[0]}.{sys.version_info[1]} for uid 1000"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "runuser (util-linux) is not installed"
    return None


USER = _user()
SKIP = _why_not()


_MADE: list[Path] = []  # user_dir()'s directories, removed when the test process exits


def user_dir() -> Path:
    """A fresh directory under the system temporary directory that the user owns; removed
    with everything in it when the test process exits."""
    path = Path(tempfile.mkdtemp(prefix="agentworld-as-user-"))
    _MADE.append(path)
    if os.geteuid() == 0 and USER is not None:
        os.chown(path, USER.pw_uid, USER.pw_gid)
    return path


@atexit.register
def _remove_user_dirs() -> None:
    for path in _MADE:
        shutil.rmtree(path, ignore_errors=True)


def run_as_user(args: list[str], cwd: Path, timeout: float = 300,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``["agentworld", ...]`` (the CLI) or ``[SOURCE, ARG...]`` (Python source, its
    ``sys.argv`` being ``[SOURCE, ARG...]``) as the user in ``cwd``, with the clean environment
    above plus ``env``; output captured as text."""
    assert USER is not None and SKIP is None, SKIP
    clean = {"PATH": USER_PATH, "HOME": USER.pw_dir, "LANG": "C.UTF-8", "USER": USER.pw_name,
             "LOGNAME": USER.pw_name, "COLUMNS": "200", **(env or {})}
    argv = [_python() or sys.executable, "-c", BOOT, SITE, *args]
    if os.geteuid() == 0:
        argv = ["runuser", "-u", USER.pw_name, "--", "env", "-i",
                *(f"{k}={v}" for k, v in clean.items()), *argv]
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              check=False)
    return subprocess.run(argv, cwd=cwd, env=clean, capture_output=True, text=True,
                          timeout=timeout, check=False)
