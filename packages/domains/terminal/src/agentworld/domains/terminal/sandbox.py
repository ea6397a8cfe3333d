"""Sandbox selection and the command line that starts a sandboxed bash.

Two sandboxes are supported, tried in this order:

* ``bubblewrap`` (``bwrap``): read-only view of ``/``, the episode root bound
  writable at ``/home/agent`` (inside a read-only ``/home`` of fixed date), private ``/tmp`` (tmpfs), fresh ``/dev`` and
  ``/proc``, all namespaces unshared (no network: only ``lo`` exists),
  hostname ``sandbox``, uid/gid 1000 shown as ``user``.
* ``unshare`` (util-linux) fallback: new user, network, pid, mount, ipc and
  uts namespaces, a private ``/tmp``, and the same view of the home directory as under
  bubblewrap: the episode root bound at ``/home/agent`` inside the fixed-date ``/home``,
  ``passwd``/``group`` files bound over ``/etc``, hostname ``sandbox``. Without helper
  binaries an unprivileged user namespace maps one uid, so the shell runs as uid 0 of
  its namespace, named ``user`` there (``ls -l`` and ``whoami`` show what bubblewrap shows;
  ``id`` shows uid 0). The rest of the host file system is protected only by the
  permissions of the unprivileged host uid.

When the caller is root, the sandbox is started through ``setpriv`` as an
unprivileged uid of its own (chosen per sandbox, see :func:`sandbox_uid`):
``RLIMIT_NPROC`` counts the processes of the *real* uid and is not enforced
for privileged processes, so only this makes the process limit stop a fork
bomb. Resource limits are set with ``setrlimit`` before ``exec`` and are
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
import shlex
import shutil
import subprocess
from pathlib import Path

from agentworld.domains.terminal.fs import SETUP_MTIME
from agentworld.domains.terminal.limits import Limits
from agentworld.domains.terminal.prompt import HOME

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SANDBOX_ENV_VAR = "AGENTWORLD_TERMINAL_SANDBOX"
_UID_BASE, _UID_SPAN = 200_000, 100_000
_counter = itertools.count()
_BWRAP_FIXED = (
    "--ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent "
    "--uid 1000 --gid 1000 --hostname sandbox"
).split()
_UNSHARE_FIXED = (
    "unshare --user --map-root-user --net --pid --fork --mount-proc --ipc --uts".split()
)


def _run_ok(argv: list[str]) -> bool:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _setpriv_prefix(uid: int) -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        raise RuntimeError("running as root needs `setpriv` (util-linux) to drop privileges")
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


@functools.cache
def detect_sandbox() -> str:
    """The sandbox this machine can run: ``"bubblewrap 0.8.0"`` or ``"unshare"``.

    The environment variable ``AGENTWORLD_TERMINAL_SANDBOX`` (``bwrap`` or
    ``unshare``) restricts the choice. The result is cached per process.

    Raises:
        RuntimeError: no sandbox works here; the message says what was tried.
    """
    wanted = os.environ.get(SANDBOX_ENV_VAR, "").strip().lower()
    tried: list[str] = []
    probe_uid = sandbox_uid()
    if wanted in ("", "bwrap", "bubblewrap"):
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            tried.append("bwrap: not installed (apt-get install bubblewrap)")
        elif _run_ok(
            [
                *_setpriv_prefix(probe_uid),
                bwrap,
                "--ro-bind",
                "/",
                "/",
                "--unshare-all",
                "--die-with-parent",
                "true",
            ]
        ):
            version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout
            return version.strip() or "bubblewrap"
        else:
            tried.append("bwrap: installed but cannot create namespaces here")
    if wanted in ("", "unshare"):
        if shutil.which("unshare") is None:
            tried.append("unshare: not installed (util-linux)")
        elif _run_ok(
            [
                *_setpriv_prefix(probe_uid),
                "unshare",
                "--user",
                "--map-root-user",
                "--net",
                "--pid",
                "--fork",
                "--mount-proc",
                "true",
            ]
        ):
            return "unshare"
        else:
            tried.append("unshare: user namespaces are not permitted here")
    raise RuntimeError(
        "no sandbox for the terminal domain: "
        + "; ".join(tried or [f"{SANDBOX_ENV_VAR}={wanted!r} is not a sandbox"])
    )


def sandbox_uid() -> int:
    """A fresh unprivileged host uid for one sandbox (root callers), or the caller's uid.

    A uid of its own per sandbox keeps one sandbox's fork bomb from using up
    the process limit of sandboxes running in parallel.
    """
    if os.geteuid() != 0:
        return os.getuid()
    return _UID_BASE + (os.getpid() * 7919 + next(_counter)) % _UID_SPAN


def inside_uid(kind: str) -> int:
    """The uid (and gid) the shell has inside sandbox ``kind``: 1000 under bubblewrap, 0 under
    unshare (its only mapped uid)."""
    return 1000 if kind.startswith("bubblewrap") else 0


def write_identity(meta: Path, uid: int | None = None, inside: int = 1000) -> None:
    """Write ``passwd``/``group`` files naming uid/gid ``inside`` ``user`` into ``meta``, and the
    ``home/agent`` skeleton that the sandbox mounts as ``/home`` (owned by ``uid`` when given,
    dated :data:`~agentworld.domains.terminal.fs.SETUP_MTIME`, so ``ls -la`` shows a
    reproducible ``..``)."""
    root = "" if inside == 0 else "root:x:0:0:root:/root:/bin/bash\n"
    meta.joinpath("passwd").write_text(
        f"{root}user:x:{inside}:{inside}:user:{HOME}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    root_group = "" if inside == 0 else "root:x:0:\n"
    meta.joinpath("group").write_text(f"{root_group}user:x:{inside}:\nnogroup:x:65534:\n")
    home = meta / "home"
    (home / "agent").mkdir(parents=True, exist_ok=True)
    for path in (meta, meta / "passwd", meta / "group", home, home / "agent"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    for path in (home / "agent", home):
        if uid is not None and os.geteuid() == 0:
            os.chown(path, uid, uid)
        os.utime(path, (SETUP_MTIME, SETUP_MTIME))


def sandbox_argv(kind: str, root: Path, meta: Path, uid: int, limits: Limits) -> list[str]:
    """The command line starting ``bash`` inside sandbox ``kind`` for episode ``root``, whose
    home directory is ``/home/agent``.

    Args:
        kind: A value of :func:`detect_sandbox`.
        root: The episode's writable root directory (owned by ``uid``).
        meta: Directory holding the ``passwd``/``group`` files (:func:`write_identity`, with
            ``inside=inside_uid(kind)``).
        uid: Host uid the sandbox runs as (:func:`sandbox_uid`).
        limits: Resource limits (only ``tmp_bytes`` is used here).
    """
    bash = ["bash", "--norc", "--noprofile", "--noediting", "-i"]
    # TABSIZE=0: ls pads columns with spaces only (no tab characters in observations).
    env = {"HOME": HOME, "PATH": PATH, "TERM": "dumb", "LANG": "C.UTF-8", "TABSIZE": "0"}
    env |= {"USER": "user", "LOGNAME": "user", "SHELL": "/bin/bash"}
    prefix = _setpriv_prefix(uid)
    if kind.startswith("bubblewrap"):
        argv = [*prefix, "bwrap", *_BWRAP_FIXED, "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
        argv += ["--ro-bind", str(meta / "home"), "/home"]
        argv += ["--bind", str(root), HOME, "--chdir", HOME, "--clearenv"]
        for name in ("passwd", "group"):
            argv += ["--ro-bind", str(meta / name), f"/etc/{name}"]
        for key, value in env.items():
            argv += ["--setenv", key, value]
        return argv + bash

    # unshare: the namespace's root builds bubblewrap's view with bind mounts (the episode
    # root and meta may live under /tmp, so they are bound before /tmp is hidden) and brings
    # up loopback where iproute2 is installed; a failed mount stops the start rather than run
    # with the host's view. sh stays the namespace's init and runs bash as its child (as
    # bubblewrap's init does): init ignores a SIGKILL sent from inside, so `kill -9 $$` would
    # not end a bash that was pid 1.
    def bind(source: Path, target: str) -> str:
        return f"mount --bind {shlex.quote(str(source))} {target}"

    script = " && ".join(
        [
            bind(meta / "home", "/home"),
            bind(root, HOME),
            bind(meta / "passwd", "/etc/passwd"),
            bind(meta / "group", "/etc/group"),
            f"mount -t tmpfs -o size={limits.tmp_bytes} tmpfs /tmp",
            "hostname sandbox",
            "{ ip link set lo up 2>/dev/null || true; }",
            f"cd {HOME}",
            '"$@"',
        ]
    )
    argv = [*prefix, "env", "-i", *(f"{k}={v}" for k, v in env.items()), *_UNSHARE_FIXED]
    return [*argv, "sh", "-c", script, "sh", *bash]
