"""A memory and process limit on a sandbox as a whole, with a cgroup where one can be made.

``RLIMIT_AS`` bounds each process; the sandbox as a whole (64 processes of 1 GiB, plus its
tmpfs) is bounded only by a cgroup. :func:`make_cgroup` creates one per sandbox under the
caller's own cgroup when that is writable:

* cgroup v2 (``Documentation/admin-guide/cgroup-v2.rst``): the caller's cgroup must already
  delegate the ``memory`` controller (``cgroup.subtree_control``); the child gets
  ``memory.max``, ``memory.swap.max`` = 0 and ``pids.max``;
* cgroup v1 (``Documentation/admin-guide/cgroup-v1/memory.rst``): a child of the caller's
  ``memory`` cgroup gets ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes``, so
  the limit holds with swap), and one of its ``pids`` cgroup ``pids.max``.

The sandbox's first process joins the cgroups before ``exec`` (:meth:`SandboxCgroup.join`,
from the ``preexec_fn``); :meth:`SandboxCgroup.remove` deletes them once the sandbox is gone.
Cgroups of processes that died without removing theirs are removed at the next creation. When
none can be made (no cgroup file system, not writable: an unprivileged user without systemd
delegation), :func:`make_cgroup` returns ``None``. A user with a systemd user manager then gets
a transient scope per sandbox instead (:func:`systemd_scope`: ``systemd-run --user --scope``
with ``MemoryMax``, ``MemorySwapMax=0`` and ``TasksMax``, ``systemd.resource-control(5)``);
elsewhere only the per-process limits hold (``RLIMIT_AS`` times ``RLIMIT_NPROC``,
:class:`~agentworld.domains.terminal.limits.Limits`). :func:`memory_bound` says which.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field

from agentworld.domains.terminal.tools import find_tool

CGROUP_ROOT = "/sys/fs/cgroup"
_NAME = re.compile(r"agentworld-(\d+)-\d+\Z")
_counter = itertools.count()
_released: set[str] = set()  # this process's cgroups whose processes were still exiting


def _own_cgroups() -> dict[str, str]:
    """``{controller or "": path}`` from ``/proc/self/cgroup`` (``cgroups(7)``)."""
    found = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup", encoding="ascii") as fh:
        for line in fh:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                found[name] = path
    return found


@functools.cache
def _parents() -> tuple[str, dict[str, str]] | None:
    """``("v2" | "v1", {role: directory})`` where sandbox cgroups can be made, or ``None``."""
    own = _own_cgroups()
    if "" in own and os.path.exists(f"{CGROUP_ROOT}/cgroup.controllers"):
        parent = CGROUP_ROOT + own[""]
        try:
            with open(f"{parent}/cgroup.subtree_control", encoding="ascii") as fh:
                delegated = fh.read().split()
        except OSError:
            delegated = []
        if "memory" in delegated and os.access(parent, os.W_OK):
            return "v2", {"memory": parent}
    if "memory" in own:
        parent = f"{CGROUP_ROOT}/memory{own['memory']}"
        if os.access(f"{parent}/memory.limit_in_bytes", os.R_OK) and os.access(parent, os.W_OK):
            roles = {"memory": parent}
            pids = f"{CGROUP_ROOT}/pids{own.get('pids', '/')}"
            if os.access(f"{pids}/pids.max", os.R_OK) and os.access(pids, os.W_OK):
                roles["pids"] = pids
            return "v1", roles
    return None


def cgroup_support() -> str:
    """What cgroup bounds a sandbox as a whole here, in words; starts with ``"none"`` when
    no cgroup can be made (see :func:`memory_bound` for what holds then)."""
    found = _parents()
    if found is None:
        return "none (no writable cgroup): memory is bounded per process only"
    version, roles = found
    return f"cgroup {version} ({', '.join(sorted(roles))}) per sandbox"


@functools.cache
def systemd_scope_support() -> str | None:
    """Why ``systemd-run --user --scope`` cannot bound a sandbox here, or ``None`` when it can
    (checked once per process by running ``true`` in a scope with the limits set)."""
    tool = find_tool("systemd-run")
    if tool is None:
        return "systemd-run not installed"
    try:
        done = subprocess.run([*systemd_scope(64 << 20, 16), "true"], capture_output=True,
                              text=True, timeout=15, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"systemd-run --user failed: {exc}"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        return f"no systemd user manager ({said[-1] if said else f'exit {done.returncode}'})"
    return None


def systemd_scope(memory_bytes: int, nproc: int) -> list[str]:
    """The command-line prefix that runs a program in a new transient scope of the user's
    systemd manager limited to ``memory_bytes`` (no swap) and ``nproc`` tasks."""
    return [find_tool("systemd-run") or "systemd-run", "--user", "--scope", "--quiet",
            "--collect", "-p", f"MemoryMax={memory_bytes}", "-p", "MemorySwapMax=0",
            "-p", f"TasksMax={nproc}", "--"]  # fmt: skip


def memory_bound() -> str:
    """How a sandbox's memory is bounded here: ``"cgroup"`` (a cgroup per sandbox,
    :func:`make_cgroup`), ``"systemd"`` (a user scope per sandbox, :func:`systemd_scope`) or
    ``"rlimit"`` (per process only: ``RLIMIT_AS`` and ``RLIMIT_NPROC``)."""
    if _parents() is not None:
        return "cgroup"
    if os.geteuid() != 0 and systemd_scope_support() is None:
        return "systemd"
    return "rlimit"


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _retry_released() -> None:
    for path in list(_released):
        try:
            os.rmdir(path)
        except FileNotFoundError:
            pass
        except OSError:
            continue
        _released.discard(path)


atexit.register(lambda: SandboxCgroup(list(_released)).remove(wait_s=1.0))


def _sweep(parent: str) -> None:
    _retry_released()
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            match = _NAME.match(name)
            if match and not os.path.exists(f"/proc/{match.group(1)}"):
                with contextlib.suppress(OSError):
                    os.rmdir(f"{parent}/{name}")


@dataclass
class SandboxCgroup:
    """The cgroup directories of one sandbox (one per hierarchy)."""

    dirs: list[str] = field(default_factory=list)

    def join(self) -> None:
        """Move the calling process into the cgroups (run in the child before ``exec``)."""
        for path in self.dirs:
            _write(f"{path}/cgroup.procs", str(os.getpid()))

    def kill(self, rounds: int = 5) -> None:
        """SIGKILL every process in the cgroups (``cgroup.procs``), repeating while some are
        left (a fork between reading and killing), at most ``rounds`` times."""
        for _ in range(rounds):
            pids: set[int] = set()
            for path in self.dirs:
                with contextlib.suppress(OSError), open(f"{path}/cgroup.procs") as fh:
                    pids.update(int(line) for line in fh if line.strip())
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self, wait_s: float = 0.0) -> None:
        """Delete the cgroups, waiting up to ``wait_s`` for their processes to be gone; one
        still busy then is deleted at the next :func:`make_cgroup` or at exit."""
        deadline = time.monotonic() + wait_s
        for path in self.dirs:
            while True:
                try:
                    os.rmdir(path)
                    _released.discard(path)
                    break
                except FileNotFoundError:
                    _released.discard(path)
                    break
                except OSError:
                    if time.monotonic() >= deadline:
                        _released.add(path)
                        break
                    time.sleep(0.01)


def make_cgroup(memory_bytes: int, nproc: int) -> SandboxCgroup | None:
    """A new cgroup limiting a sandbox to ``memory_bytes`` of memory (tmpfs pages included)
    and ``nproc`` processes, or ``None`` where none can be made (see the module docstring)."""
    found = _parents()
    if found is None:
        return None
    version, roles = found
    name = f"agentworld-{os.getpid()}-{next(_counter)}"
    group = SandboxCgroup()
    try:
        for role, parent in roles.items():
            _sweep(parent)
            path = f"{parent}/{name}"
            os.mkdir(path)
            group.dirs.append(path)
            if version == "v2":
                _write(f"{path}/memory.max", str(memory_bytes))
                with contextlib.suppress(OSError):
                    _write(f"{path}/memory.swap.max", "0")
                with contextlib.suppress(OSError):
                    _write(f"{path}/pids.max", str(nproc))
            elif role == "memory":
                _write(f"{path}/memory.limit_in_bytes", str(memory_bytes))
                with contextlib.suppress(OSError):
                    _write(f"{path}/memory.memsw.limit_in_bytes", str(memory_bytes))
            else:
                _write(f"{path}/pids.max", str(nproc))
    except OSError:
        group.remove(0)
        return None
    return group
