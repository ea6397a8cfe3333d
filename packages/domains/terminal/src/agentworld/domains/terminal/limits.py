"""Resource limits of a sandbox and the ``preexec_fn`` that applies them.

Limits are set with ``setrlimit`` in the child before ``exec`` and are
inherited by everything inside the sandbox (``ulimit -a`` shows them). The same
``preexec_fn`` drops a root caller to the sandbox's own uid and sets the kernel's
parent-death signal (``prctl(2)``: ``PR_SET_PDEATHSIG``, ``PR_SET_NO_NEW_PRIVS``).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-sandbox resource limits.

    Attributes:
        cpu_s: CPU time per process, seconds (``RLIMIT_CPU``).
        memory_bytes: Address space per process, bytes (``RLIMIT_AS``).
        nproc: Processes of the sandbox uid (``RLIMIT_NPROC``); when not
            running as root this is added to the user's current count.
        file_bytes: Largest file a process may write, bytes (``RLIMIT_FSIZE``).
        sandbox_memory_bytes: Memory of the whole sandbox, bytes (its processes and tmpfs
            pages), where a cgroup or a systemd user scope can be made
            (:mod:`agentworld.domains.terminal.cgroup`); elsewhere memory is bounded per
            process only.
        tmp_bytes: Size of each private tmpfs (``/tmp``, ``/var/tmp``, ``/dev/shm``), bytes.
        disk_bytes: Size of the episode root's own file system, bytes (an ext4 image for root,
            :mod:`agentworld.domains.terminal.disk`; a tmpfs in namespaces of its own for other
            users, :mod:`agentworld.domains.terminal.nstmpfs`); 0 puts the root on the host's
            file system, which ``AGENTWORLD_TERMINAL_UNBOUNDED=disk`` must accept.
        disk_inodes: Inodes of the episode root's own file system (files and directories).
        command_timeout_s: Wall-clock limit of one command, seconds.
        output_bytes: Most output kept in one observation, bytes.
    """

    cpu_s: int = 30
    memory_bytes: int = 1 << 30
    nproc: int = 64
    file_bytes: int = 16 << 20
    sandbox_memory_bytes: int = 2 << 30
    tmp_bytes: int = 64 << 20
    disk_bytes: int = 256 << 20
    disk_inodes: int = 16384
    command_timeout_s: float = 5.0
    output_bytes: int = 4096


def _user_process_count(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", encoding="ascii", errors="replace") as fh:
                for line in fh:
                    if line.startswith("Uid:"):
                        count += int(line.split()[1]) == uid
                        break
        except OSError:
            continue
    return count


# Signals a terminal's programs get with their default action. A child inherits ignored
# signals through exec: Python ignores SIGPIPE and SIGXFSZ, and a background job (`cmd &` in a
# script, some test runners' workers) ignores SIGINT and SIGQUIT. Inherited, `yes | head -1`
# would print "Broken pipe" and ^C would not stop a command.
DEFAULT_SIGNALS = (
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGHUP,
    signal.SIGTERM,
    signal.SIGPIPE,
    signal.SIGXFSZ,
)


_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS = 1, 38  # <linux/prctl.h>
_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> None:
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}, {value}) failed")


def sandbox_preexec(
    kind: str, limits: Limits, uid: int, join: Callable[[], None] | None = None
) -> Callable[[], None]:
    """A ``preexec_fn`` for sandbox ``kind`` run as host ``uid``.

    In the child before ``exec``: ``join`` runs (entering the sandbox's cgroup, while still
    privileged); a root caller becomes ``uid`` (no supplementary groups);
    ``limits`` are applied; :data:`DEFAULT_SIGNALS` get their default action; the ``unshare``
    fallback gets ``no_new_privs`` (bubblewrap sets it itself); last, the kernel's
    parent-death signal is set to SIGKILL (after the uid change, which would clear it), so the
    sandbox dies with the Python thread that started it.
    """
    nproc = limits.nproc if os.geteuid() == 0 else _user_process_count(uid) + limits.nproc
    drop = os.geteuid() == 0 and uid != 0
    no_new_privs = not kind.startswith("bubblewrap")

    def apply() -> None:
        if join is not None:
            join()
        if drop:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        for which, value in (
            (resource.RLIMIT_CPU, limits.cpu_s),
            (resource.RLIMIT_AS, limits.memory_bytes),
            (resource.RLIMIT_NPROC, nproc),
            (resource.RLIMIT_FSIZE, limits.file_bytes),
            (resource.RLIMIT_CORE, 0),
        ):
            resource.setrlimit(which, (value, value))
        for sig in DEFAULT_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        if no_new_privs:
            _prctl(_PR_SET_NO_NEW_PRIVS, 1)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return apply
