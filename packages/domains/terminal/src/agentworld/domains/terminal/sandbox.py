"""Sandbox selection and the command line that starts a sandboxed bash.

Two sandboxes are supported, tried in this order:

* ``bubblewrap`` (``bwrap``): read-only view of ``/``, the episode root bound
  writable at ``/home/agent`` (inside a read-only ``/home`` of fixed date), private ``/tmp`` (tmpfs), fresh ``/dev`` and
  ``/proc``, all namespaces unshared (no network: only ``lo`` exists),
  hostname ``sandbox``, uid/gid 1000 shown as ``user``.
* ``unshare`` (util-linux) fallback: new user, network, pid, mount, ipc and
  uts namespaces and a private ``/tmp``; the shell starts in the episode
  root, which is its ``HOME`` (``cwd`` in observation states is mapped back to
  ``/home/agent``, but ``pwd`` prints the host path).
  The host file system is protected only by the permissions of the
  unprivileged uid, and paths show the host location of the root.

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


def write_identity(meta: Path, uid: int | None = None) -> None:
    """Write ``passwd``/``group`` files naming uid/gid 1000 ``user`` into ``meta``, and the
    ``home/agent`` skeleton that bubblewrap mounts as ``/home`` (owned by ``uid`` when given,
    dated :data:`~agentworld.domains.terminal.fs.SETUP_MTIME`, so ``ls -la`` shows a
    reproducible ``..``)."""
    meta.joinpath("passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\n"
        f"user:x:1000:1000:user:{HOME}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    meta.joinpath("group").write_text("root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n")
    home = meta / "home"
    (home / "agent").mkdir(parents=True, exist_ok=True)
    for path in (meta, meta / "passwd", meta / "group", home, home / "agent"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    for path in (home / "agent", home):
        if uid is not None and os.geteuid() == 0:
            os.chown(path, uid, uid)
        os.utime(path, (SETUP_MTIME, SETUP_MTIME))


def sandbox_argv(
    kind: str, root: Path, meta: Path, uid: int, limits: Limits
) -> tuple[list[str], str]:
    """(argv, home) starting ``bash`` inside sandbox ``kind`` for episode ``root``.

    Args:
        kind: A value of :func:`detect_sandbox`.
        root: The episode's writable root directory (owned by ``uid``).
        meta: Directory holding the ``passwd``/``group`` files (:func:`write_identity`).
        uid: Host uid the sandbox runs as (:func:`sandbox_uid`).
        limits: Resource limits (only ``tmp_bytes`` is used here).

    Returns:
        The command line and the home directory as seen inside.
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
        return argv + bash, HOME
    # unshare: no bind mounts without privileges; the root itself is HOME. The
    # root may live under /tmp: re-bind it (through the cwd) after hiding /tmp.
    env |= {"HOME": str(root)}
    script = (
        f"mount -t tmpfs -o size={limits.tmp_bytes} tmpfs /tmp 2>/dev/null && "
        'case "$HOME" in /tmp/*) mkdir -p "$HOME" && mount -c --bind . "$HOME" && cd "$HOME";; '
        'esac; exec "$@"'
    )
    argv = [*prefix, "env", "-i", *(f"{k}={v}" for k, v in env.items()), *_UNSHARE_FIXED]
    return [*argv, "sh", "-c", script, "sh", *bash], str(root)
