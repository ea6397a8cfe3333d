"""A bounded episode disk for a caller that is not root: a tmpfs in namespaces of its own.

An unprivileged user cannot loop-mount an ext4 image (:mod:`agentworld.domains.terminal.disk`),
but may mount a tmpfs inside a user and mount namespace it creates (``user_namespaces(7)``,
``mount_namespaces(7)``). :class:`NamespaceTmpfs` starts a small holder process:
``unshare --user --map-root-user --mount`` whose shell mounts a tmpfs of ``size`` bytes and
``nr_inodes`` inodes (``nosuid,nodev``) over the episode's directory and then waits on a pipe
from this process. The mount exists only in the holder's mount namespace; the host reaches the
files through the holder's root, ``/proc/<holder>/root/<directory>`` (:attr:`path`: the same
user, a dumpable process, so ``proc(5)`` grants it), and the sandbox is started inside the
holder's namespaces (:attr:`enter`, ``nsenter --user --mount --preserve-credentials``) where it
binds the directory as usual. The episode's files then never touch the host's disk; a command
that writes past the bound gets ``ENOSPC``, and the tmpfs pages are freed when the holder ends.

The holder ends when :meth:`unmount` closes its pipe, or when this process dies (SIGKILL
included: the kernel closes the pipe, and the holder's ``cat`` reads end of file). Each uid maps
to itself through the holder: the caller is root in the holder's namespace and the sandbox's
``user`` (uid 1000 inside) is the caller on the host, so the files stay the caller's.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import tempfile
import threading
from pathlib import Path

from agentworld.domains.terminal.tools import find_tool

_SCRIPT = '"$1" -t tmpfs -o "$2" tmpfs "$3" && echo ready && exec "$4" >/dev/null'
_TOOLS = ("unshare", "nsenter", "mount", "sh", "cat")
_lock = threading.Lock()
_held: dict[str, NamespaceTmpfs] = {}  # host path -> holder, for the sandbox that binds it


class NamespaceTmpfs:
    """A tmpfs over ``directory`` in a holder's own user and mount namespaces.

    Args:
        directory: An empty directory of the caller's (it stays empty on the host).
        size_bytes: Size of the tmpfs (``size=``), bytes.
        inodes: Inodes of the tmpfs (``nr_inodes=``): files, directories and links.

    Attributes:
        directory: The directory the tmpfs is mounted over inside the holder's namespaces.
        path: Where the host reads and writes the files: ``/proc/<holder>/root/<directory>``.
        enter: The command-line prefix that runs a program inside the holder's namespaces.

    Raises:
        OSError: the holder did not start or the mount failed (the message says why); nothing
            is left running then.
    """

    def __init__(self, directory: Path, size_bytes: int, inodes: int) -> None:
        tools = {name: find_tool(name) for name in _TOOLS}
        missing = [name for name, path in tools.items() if path is None]
        if missing:
            raise OSError(f"{', '.join(missing)} not found (util-linux)")
        self.directory = Path(directory)
        options = f"size={size_bytes},nr_inodes={inodes},mode=0700,nosuid,nodev"
        argv = [tools["unshare"], "--user", "--map-root-user", "--mount", "--propagation",
                "private", "--", tools["sh"], "-c", _SCRIPT, "holder", tools["mount"], options,
                str(self.directory), tools["cat"]]  # fmt: skip
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={"PATH": "/usr/bin:/bin", "LANG": "C"},
        )  # fmt: skip
        assert self._proc.stdout is not None
        if self._proc.stdout.readline() != b"ready\n":
            self._proc.kill()
            _, err = self._proc.communicate(timeout=10)
            said = err.decode(errors="replace").strip().splitlines()
            raise OSError(f"tmpfs in a user namespace failed: {said[-1] if said else 'no mount'}")
        self.path = Path(f"/proc/{self._proc.pid}/root{self.directory}")
        self.enter = [tools["nsenter"], f"--target={self._proc.pid}", "--user", "--mount",
                      "--preserve-credentials", "--"]  # fmt: skip
        with _lock:
            _held[str(self.path)] = self

    def mount_tmpfs(self, target: Path, size_bytes: int) -> Path:
        """Mount a tmpfs of ``size_bytes`` (mode 0700, ``nosuid,nodev``) over the empty
        directory ``target`` in the holder's mount namespace only, where the sandbox binds its
        identity files from: ``/proc/self/mountinfo`` inside then shows ``/passwd``, not the
        host path of the session directory. Gone with the holder.

        Returns:
            Where the host reads and writes it: ``/proc/<holder>/root/<target>``.

        Raises:
            OSError: the mount failed (the message says why).
        """
        argv = [*self.enter, find_tool("mount") or "mount", "-t", "tmpfs", "-o",
                f"size={size_bytes},mode=0700,nosuid,nodev", "tmpfs", str(target)]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30,
                              env={"PATH": "/usr/bin:/bin", "LANG": "C"})  # fmt: skip
        if done.returncode != 0:
            said = done.stderr.strip().splitlines()
            raise OSError(f"tmpfs in the holder's namespace failed: {said[-1] if said else ''}")
        return Path(f"/proc/{self._proc.pid}/root{target}")

    def alive(self) -> bool:
        """Whether the holder (and so the file system) is still there."""
        return self._proc.poll() is None

    def unmount(self) -> None:
        """End the holder: the tmpfs and its files are gone. Idempotent."""
        with _lock:
            _held.pop(str(self.path), None)
        if self._proc.poll() is None:
            with contextlib.suppress(OSError):
                assert self._proc.stdin is not None
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def holder_of(path: str | Path) -> NamespaceTmpfs | None:
    """The live :class:`NamespaceTmpfs` whose :attr:`~NamespaceTmpfs.path` is ``path``, or
    ``None`` (a root on the host's own file systems)."""
    with _lock:
        return _held.get(str(path))


@functools.cache
def namespace_tmpfs_support() -> str | None:
    """Why a :class:`NamespaceTmpfs` cannot be made here, or ``None`` when it can (checked once
    per process by making one, writing a file through :attr:`~NamespaceTmpfs.path` and seeing
    ``ENOSPC`` past its size)."""
    with tempfile.TemporaryDirectory(prefix="agentworld-nstmpfs-probe-") as tmp:
        target = Path(tmp, "root")
        target.mkdir()
        try:
            held = NamespaceTmpfs(target, 64 << 10, 64)
        except OSError as exc:
            return str(exc)
        try:
            with open(held.path / "probe", "wb") as fh:
                fh.write(b"x" * (128 << 10))
            return "a tmpfs in a user namespace did not bound its size"
        except OSError as exc:
            if exc.errno != 28:  # ENOSPC: the bound holds
                return f"the holder's files cannot be reached: {exc}"
        finally:
            held.unmount()
    return None
