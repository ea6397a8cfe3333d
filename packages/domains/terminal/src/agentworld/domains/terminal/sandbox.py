"""Sandbox selection and the command line that starts a sandboxed bash.

Two sandboxes are supported, tried in this order; both show the shell the same file system
(:mod:`agentworld.domains.terminal.layout`: a new read-only root holding ``/usr``, the pieces
of ``/etc`` a shell needs, private tmpfs ``/tmp``, ``/var/tmp``, ``/run`` and ``/dev/shm``, a
minimal ``/dev``, and the episode root at ``/home/agent``) and give the same guarantees:

* ``bubblewrap`` (``bwrap``): all namespaces unshared (no network: only ``lo`` exists),
  hostname ``sandbox``, the shell runs as uid/gid 1000 (``user``) with no capabilities,
  ``--die-with-parent``.
* ``unshare`` (util-linux >= 2.38) fallback: new user, mount, pid, network, ipc and uts
  namespaces. The root of the new user namespace builds the view under a tmpfs, switches
  into it with ``pivot_root`` and detaches the host's tree (the host's ``/tmp``, ``/home`` or
  ``/work`` are then not under the sandbox's root at all, so no ``umount`` can uncover them),
  then starts bash in a nested user namespace as uid 1000 with no capabilities and
  ``no_new_privs`` (``umount`` fails with EPERM). ``--kill-child`` gives the namespace's init
  the kernel's death signal when ``unshare`` dies.

Both run bash as a child of the pid namespace's init, our own
(:func:`agentworld.domains.terminal.newroot.supervise`; bubblewrap runs with ``--as-pid-1``),
which the agent cannot ``ptrace`` (it is not dumpable), so every process of the sandbox dies
when the process Python started dies: Python kills init and that process on close, and the
kernel's parent-death signal (``PR_SET_PDEATHSIG``, set before ``exec`` and on init, which no
one inside can clear) kills them when the Python process (precisely: the thread that started
the sandbox) dies, by SIGKILL included.

When the caller is root, the sandbox runs as an unprivileged uid of its own (chosen per
sandbox, see :func:`sandbox_uid`), set before ``exec``: ``RLIMIT_NPROC`` counts the processes
of the *real* uid and is not enforced for privileged processes, so only this makes the process
limit stop a fork bomb. Resource limits are set with ``setrlimit`` before ``exec`` and are
inherited by everything inside (see :class:`Limits`).

``bwrap --new-session`` is deliberately not used: the shell needs the pseudo
terminal as its controlling terminal so that Ctrl-C interrupts a command, and
the terminal is a private pty whose only reader is the sandbox itself (so
``TIOCSTI`` can inject input only into the sandbox's own shell).
"""

from __future__ import annotations

import functools
import itertools
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from agentworld.core.errors import EnvironmentUnavailableError
from agentworld.domains.terminal.fs import SETUP_MTIME
from agentworld.domains.terminal.hostfiles import make_dir, write_file
from agentworld.domains.terminal.layout import bwrap_args, plan, plan_json
from agentworld.domains.terminal.limits import Limits, sandbox_preexec
from agentworld.domains.terminal.prompt import HOME
from agentworld.domains.terminal.tools import find_tool, install_command

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SANDBOX_ENV_VAR = "AGENTWORLD_TERMINAL_SANDBOX"
INSIDE_UID = 1000  # uid and gid of the shell inside every sandbox, named ``user``
INPUT_DIR = "/run/agentworld"  # read-only inside: multi-line, long actions (shell.ACTION_FILE)
# Per-sandbox host uids of root callers: above login.defs' default SUB_UID_MAX (600,100,000),
# so not in the subordinate ranges useradd hands out, and below 2**31 (tools that read uids as
# signed ints); any range /etc/subuid or /etc/subgid lists is skipped all the same.
_UID_BASE, _UID_SPAN = 1_000_000_000, 1_000_000
_counter = itertools.count()
_BWRAP_FIXED = (
    "--unshare-all --unshare-user --die-with-parent --as-pid-1 "
    f"--uid {INSIDE_UID} --gid {INSIDE_UID} --hostname sandbox"
).split()
_UNSHARE_FIXED = [
    "unshare", "--user", "--map-root-user", "--mount", "--propagation", "private", "--pid",
    "--kill-child", "--net", "--ipc", "--uts",
]  # fmt: skip
_UNSHARE_INNER = f"unshare --user --map-user={INSIDE_UID} --map-group={INSIDE_UID} --".split()


def _probe(kind: str) -> str | None:
    """Start ``true`` in sandbox ``kind`` with its full set-up; ``None`` when it works, else
    what went wrong (the last line of its error output)."""
    uid = sandbox_uid()
    with tempfile.TemporaryDirectory(prefix="agentworld-probe-") as tmp:
        root, meta = Path(tmp, "root"), Path(tmp, "meta")
        root.mkdir()
        meta.mkdir()
        Path(tmp).chmod(0o755)
        root.chmod(0o755)
        write_identity(meta, uid)
        if os.geteuid() == 0:
            os.chown(root, uid, uid)
        argv = sandbox_argv(kind, root, meta, uid, Limits(), command=["true"])
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                timeout=20,
                check=False,
                preexec_fn=sandbox_preexec(kind, Limits(), uid),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
    if done.returncode == 0:
        return None
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


@functools.cache
def detect_sandbox() -> str:
    """The sandbox this machine can run: ``"bubblewrap 0.8.0"`` or ``"unshare"``.

    Each candidate is probed by starting it with its full set-up. The environment variable
    ``AGENTWORLD_TERMINAL_SANDBOX`` (``bwrap`` or ``unshare``) restricts the choice. The
    result is cached per process.

    Raises:
        EnvironmentUnavailableError: (a ``RuntimeError``) no sandbox works here; one line
            saying what was tried and the one command that fixes it.
    """
    wanted = os.environ.get(SANDBOX_ENV_VAR, "").strip().lower()
    tried: list[str] = []
    fix = install_command("bwrap")
    if wanted in ("", "bwrap", "bubblewrap"):
        bwrap = find_tool("bwrap")
        if bwrap is None:
            tried.append("bwrap is not installed")
        elif (error := _probe("bubblewrap")) is None:
            version = subprocess.run(
                [bwrap, "--version"], capture_output=True, text=True, check=False
            ).stdout
            return version.strip() or "bubblewrap"
        else:
            tried.append(f"bwrap does not start here ({error})")
            fix = userns_fix()
    if wanted in ("", "unshare"):
        missing = [t for t in ("unshare", "mount", "pivot_root") if find_tool(t) is None]
        if missing:
            tried.append(f"{', '.join(missing)} not installed")
            fix = install_command("bwrap") if find_tool("bwrap") is None else fix
        elif (error := _probe("unshare")) is not None:
            tried.append(f"unshare cannot make user and mount namespaces here ({error})")
            fix = userns_fix()
        else:
            return "unshare"
    if not tried:
        tried.append(f"{SANDBOX_ENV_VAR}={wanted!r} is not a sandbox (bwrap or unshare)")
        fix = f"unset {SANDBOX_ENV_VAR}"
    raise EnvironmentUnavailableError(
        f"no sandbox for the terminal domain: {'; '.join(tried)}; fix: {fix}"
    )


def userns_fix() -> str:
    """The one command that lets this user make user namespaces, read from the kernel's
    settings (``/proc/sys``); every route needs root, which the text says."""
    settings = (
        ("kernel/apparmor_restrict_unprivileged_userns", "1", "0"),  # Ubuntu 23.10 and later
        ("kernel/unprivileged_userns_clone", "0", "1"),  # Debian's patch
        ("user/max_user_namespaces", "0", "15000"),
    )
    for name, blocked, allowed in settings:
        try:
            value = Path("/proc/sys", name).read_text().strip()
        except OSError:
            continue
        if value == blocked:
            command = f"sysctl -w {name.replace('/', '.')}={allowed}"
            return command if os.geteuid() == 0 else f"sudo {command} (needs root)"
    return "user namespaces are refused by this machine's policy (a container or seccomp " \
        "profile); ask its administrator to allow them (needs root)"


def sandbox_uid() -> int:
    """A fresh unprivileged host uid for one sandbox (root callers), or the caller's uid.

    A uid of its own per sandbox keeps one sandbox's fork bomb from using up the process
    limit of sandboxes running in parallel. It is drawn from ``[1e9, 1e9 + 1e6)``, skipping
    the subordinate ranges of ``/etc/subuid`` and ``/etc/subgid`` (``subuid(5)``), so it is
    never the uid of another user's container.
    """
    if os.geteuid() != 0:
        return os.getuid()
    reserved = _subordinate_ranges()
    for _ in range(_UID_SPAN):
        uid = _UID_BASE + (os.getpid() * 7919 + next(_counter)) % _UID_SPAN
        if not any(start <= uid < end for start, end in reserved):
            return uid
    raise RuntimeError(
        f"every sandbox uid in [{_UID_BASE}, {_UID_BASE + _UID_SPAN}) is a subordinate id of "
        "/etc/subuid or /etc/subgid"
    )


@functools.cache
def _subordinate_ranges() -> tuple[tuple[int, int], ...]:
    """``(first, end)`` of every range in ``/etc/subuid`` and ``/etc/subgid``."""
    ranges = []
    for path in ("/etc/subuid", "/etc/subgid"):
        try:
            lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            fields = line.strip().split(":")
            if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit():
                ranges.append((int(fields[1]), int(fields[1]) + int(fields[2])))
    return tuple(ranges)


def inside_uid(kind: str) -> int:
    """The uid (and gid) the shell has inside sandbox ``kind``: 1000 in every kind."""
    return INSIDE_UID


def write_identity(meta: Path, uid: int | None = None, inside: int = INSIDE_UID) -> None:
    """Write the sandbox's own ``/etc`` files into ``meta`` (``passwd``/``group`` naming
    uid/gid ``inside`` ``user``, ``hostname``, ``hosts``), the ``home/agent`` skeleton that the
    sandbox mounts as ``/home`` (owned by ``uid`` when given, dated
    :data:`~agentworld.domains.terminal.fs.SETUP_MTIME`, so ``ls -la`` shows a reproducible
    ``..``), the empty ``newroot`` directory the ``unshare`` fallback builds its root on and
    the ``input`` directory mounted read-only at :data:`INPUT_DIR`."""
    files = {
        "passwd": "root:x:0:0:root:/root:/bin/bash\n"
        f"user:x:{inside}:{inside}:user:{HOME}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "group": f"root:x:0:\nuser:x:{inside}:\nnogroup:x:65534:\n",
        "hostname": "sandbox\n",
        "hosts": "127.0.0.1\tlocalhost\n127.0.1.1\tsandbox\n",
    }
    os.chmod(meta, 0o755)  # made by mkdtemp in a private directory: only we write here
    for name, text in files.items():
        write_file(meta, name, text.encode(), 0o644)
    home = make_dir(meta, "home", 0o755)
    agent = make_dir(home, "agent", 0o755)
    make_dir(meta, "newroot", 0o755)
    make_dir(meta, "input", 0o755)
    for path in (agent, home):
        if uid is not None and os.geteuid() == 0:
            os.chown(path, uid, uid, follow_symlinks=False)
        os.utime(path, (SETUP_MTIME, SETUP_MTIME), follow_symlinks=False)


def sandbox_argv(
    kind: str,
    root: Path,
    meta: Path,
    uid: int,
    limits: Limits,
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
    ro_binds: tuple[tuple[str, str], ...] = (),
) -> list[str]:
    """The command line starting ``bash`` inside sandbox ``kind`` for episode ``root``, whose
    home directory is ``/home/agent``. Start it with ``preexec_fn=sandbox_preexec(kind,
    limits, uid)``.

    Args:
        kind: A value of :func:`detect_sandbox`.
        root: The episode's writable root directory (owned by ``uid``).
        meta: Directory written by :func:`write_identity`.
        uid: Host uid the sandbox runs as (:func:`sandbox_uid`).
        limits: Resource limits (only ``tmp_bytes`` is used here).
        command: What to run instead of the interactive bash (probes, the interactive
            terminal's own bash).
        env: Variables set inside besides (or replacing) these: ``HOME``, ``PATH``,
            ``TERM=dumb``, ``LANG=C.UTF-8``, ``TABSIZE=0``, ``PAGER=cat``, ``USER``,
            ``LOGNAME``, ``SHELL``.
        ro_binds: ``(host directory, path under /opt)`` pairs bound read-only
            (:func:`~agentworld.domains.terminal.layout.plan`; the sandbox uid must be able to
            reach and read the host directory).
    """
    bash = command or ["bash", "--norc", "--noprofile", "--noediting", "-i"]
    # TABSIZE=0: ls pads columns with spaces only (no tab characters in observations).
    extra = env or {}
    # PAGER=cat: `git log`/`git diff` print as in a pipe; with the default `less` on a dumb
    # terminal they showed "WARNING: terminal is not fully functional" and waited for RETURN
    # until the command timed out.
    env = {"HOME": HOME, "PATH": PATH, "TERM": "dumb", "LANG": "C.UTF-8", "TABSIZE": "0",
           "PAGER": "cat"}
    env |= {"USER": "user", "LOGNAME": "user", "SHELL": "/bin/bash"} | extra
    steps = plan(root, meta, limits.tmp_bytes, ro_binds)
    if kind.startswith("bubblewrap"):
        argv = [find_tool("bwrap") or "bwrap", *_BWRAP_FIXED, *bwrap_args(steps), "--chdir", HOME, "--clearenv"]
        for key, value in env.items():
            argv += ["--setenv", key, value]
        return [*argv, _python(), "-I", "-S", "-c", _newroot_source(), "--init", "--", *bash]
    # unshare: newroot.py builds the view, then stays the pid namespace's init and runs bash as
    # its child: init ignores a SIGKILL sent from inside, so `kill -9 $$` would not end a bash
    # that was pid 1.
    unshare = [find_tool("unshare") or "unshare", *_UNSHARE_FIXED[1:]]
    argv = [find_tool("env") or "env", "-i", *(f"{k}={v}" for k, v in env.items()), *unshare]
    setup = [_python(), "-I", "-S", "-c", _newroot_source(), plan_json(steps)]
    return [*argv, *setup, str(meta / "newroot"), "--", *_UNSHARE_INNER, *bash]


@functools.cache
def _newroot_source() -> str:
    return Path(__file__).with_name("newroot.py").read_text()


def _python() -> str:
    """A Python the sandbox uid can run: the system's (a root caller's interpreter may live
    under ``/root``), else this one."""
    return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
