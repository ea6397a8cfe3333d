"""Which bounds hold for the terminal sandbox on this machine, for this user, in words.

``agentworld domains`` and ``agentworld doctor`` print these. Each :class:`Bound` says whether
it holds, how (the mechanism and the numbers of :class:`~agentworld.domains.terminal.limits.Limits`)
and, where it does not hold or holds only in part, the one command that fixes it.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass

from agentworld.domains.terminal.cgroup import cgroup_support, memory_bound, systemd_scope_support
from agentworld.domains.terminal.disk import UNBOUNDED_ENV, accepted_unbounded
from agentworld.domains.terminal.episode_root import disk_kind, disk_missing
from agentworld.domains.terminal.limits import Limits
from agentworld.domains.terminal.sandbox import detect_sandbox


@dataclass(frozen=True, slots=True)
class Bound:
    """One bound of the sandbox.

    Attributes:
        name: ``"disk"``, ``"memory"``, ``"processes"`` or ``"network"``.
        holds: Whether the bound holds here (for memory: at least per process).
        how: What holds, with its numbers, in one line.
        fix: The one command that makes it hold, or hold fully; ``None`` when nothing is
            missing.
    """

    name: str
    holds: bool
    how: str
    fix: str | None = None


def _mib(n: int) -> str:
    return f"{n >> 20} MiB"


def _linger() -> str:
    """The fix for a missing systemd user manager: lingering where systemd is the init
    system (``/run/systemd/system`` exists, as sd_booted(3) checks), else a delegated cgroup."""
    user = getpass.getuser()
    if os.path.isdir("/run/systemd/system"):
        return f"sudo loginctl enable-linger {user} (needs root), then log in again"
    return (f"systemd is not this machine's init: have root delegate a cgroup v2 subtree to "
            f"{user} (mkdir /sys/fs/cgroup/{user} && chown -R {user} /sys/fs/cgroup/{user})")


def sandbox_bounds(limits: Limits | None = None) -> list[Bound]:
    """The disk, memory, process and network bounds of a sandbox with ``limits`` (default
    :class:`Limits`) here; no bound holds where no sandbox runs (the fix then is the sandbox's,
    :func:`~agentworld.domains.terminal.sandbox.detect_sandbox`)."""
    lim = limits or Limits()
    try:
        detect_sandbox()
    except RuntimeError as exc:
        fix = str(exc).rpartition("fix: ")[2] or None
        return [Bound(name, False, "no sandbox runs here", fix)
                for name in ("disk", "memory", "processes", "network")]
    kind = disk_kind()
    per_episode = f"{_mib(lim.disk_bytes)} and {lim.disk_inodes} inodes per episode"
    if kind == "ext4":
        disk = Bound("disk", True, f"{per_episode} (an ext4 file system of its own)")
    elif kind == "tmpfs":
        disk = Bound("disk", True, f"{per_episode} (a tmpfs in the sandbox's own user and "
                                   "mount namespaces)")
    else:
        missing, fix = disk_missing()
        accepted = " (accepted by " + UNBOUNDED_ENV + ")" if "disk" in accepted_unbounded() else ""
        disk = Bound("disk", False, f"unbounded: {missing}; {lim.file_bytes >> 20} MiB per "
                                    f"file only{accepted}", fix)
    per_process = f"{_mib(lim.memory_bytes)} per process (RLIMIT_AS)"
    bound = memory_bound()
    if bound == "cgroup":
        memory = Bound("memory", True, f"{_mib(lim.sandbox_memory_bytes)} for the sandbox as a "
                                       f"whole ({cgroup_support()}), {per_process}")
    elif bound == "systemd":
        memory = Bound("memory", True, f"{_mib(lim.sandbox_memory_bytes)} for the sandbox as a "
                                       f"whole (a systemd user scope), {per_process}")
    else:
        why = cgroup_support().partition("(")[2].partition(")")[0] or "no writable cgroup"
        if os.geteuid() != 0:
            why += f", {systemd_scope_support()}"
        memory = Bound("memory", True, f"{per_process} only, up to {lim.nproc} processes; "
                                       f"not the sandbox as a whole ({why})",
                       _linger() if os.geteuid() != 0 else "mount a writable cgroup2 file "
                       "system at /sys/fs/cgroup (needs root)")
    counted = (" (RLIMIT_NPROC on a uid of its own)" if os.geteuid() == 0
               else " beyond the user's own (RLIMIT_NPROC counts per uid)")
    support = cgroup_support()
    pids = bound == "systemd" or (bound == "cgroup" and ("pids" in support or "v2" in support))
    whole = ", and a pids limit per sandbox" if pids else ""
    processes = Bound("processes", True, f"{lim.nproc} processes{counted}{whole}, "
                                         f"{lim.cpu_s} s CPU each")
    network = Bound("network", True, "none: a network namespace of its own with loopback only")
    return [disk, memory, processes, network]


def describe_bounds(limits: Limits | None = None) -> dict[str, str]:
    """:func:`sandbox_bounds` as facts for ``agentworld domains``: ``{"bound: disk": text,
    ...}``, a bound that does not hold starting ``NOT BOUNDED:``, each with ``fix: COMMAND``
    where something is missing."""
    facts = {}
    for bound in sandbox_bounds(limits):
        text = bound.how if bound.holds else f"NOT BOUNDED: {bound.how}"
        facts[f"bound: {bound.name}"] = text + (f"; fix: {bound.fix}" if bound.fix else "")
    return facts
