"""The sandbox's pid 1: builds the root (``unshare`` fallback), then supervises the shell.

Run as a script, standard library only (``-I -S``), as pid 1 of the sandbox's pid namespace,
in one of two modes:

* ``python3 -I -S -c SOURCE --init -- COMMAND...`` (bubblewrap, started with ``--as-pid-1``):
  only :func:`supervise`;
* ``python3 -I -S -c SOURCE PLAN_JSON NEW_ROOT -- COMMAND...`` (``unshare`` fallback), by the
  root of a new user namespace that also has new mount, pid, network, ipc and uts namespaces.

The fallback:

1. sets the hostname to ``sandbox`` and brings up the loopback interface;
2. mounts a tmpfs at ``NEW_ROOT`` and builds the plan there
   (:func:`agentworld.domains.terminal.layout.plan`): read-only binds (read-only remounts keep
   the locked ``nosuid``/``nodev``/``noexec``/atime flags of their source, as bubblewrap's
   ``bind-mount.c`` does), symlinks, size-limited tmpfs, a minimal ``/dev``, a new ``/proc``;
3. switches into the new root with ``pivot_root`` and detaches the host's tree, so no host
   path is under the sandbox's root any more, then makes the new root read-only;
4. stays the pid namespace's init and runs COMMAND as its child (:func:`supervise`; COMMAND
   drops to an unprivileged uid in a nested user namespace, see
   :mod:`agentworld.domains.terminal.sandbox`).

:func:`supervise` makes pid 1 untraceable and keeps it out of the agent's reach: it marks
itself not dumpable (``PR_SET_DUMPABLE`` 0, ``prctl(2)``), so a process of the agent, which has
no ``CAP_SYS_PTRACE`` in the namespace pid 1 was started in, can neither ``ptrace`` it (to clear
its parent-death signal and outlive the host) nor read its ``/proc/1/environ`` or memory
(``ptrace(2)``, "Ptrace access mode checking"). Pid 1 only receives signals from inside that it
handles, and it handles none. It installs a seccomp filter that refuses the ``TIOCSTI``
``ioctl`` (typing into the terminal's input) for everything it starts, then reaps orphans
until COMMAND exits, and exits with COMMAND's status: the kernel then kills every other
process of the namespace.

Mount flags and calls are those of ``mount(2)``, ``umount(2)`` and ``<linux/mount.h>``.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_RELATIME, MS_STRICTATIME = 1 << 21, 1 << 24
MNT_DETACH = 2
# statvfs f_flag bits (ST_*) -> mount flags (MS_*) that are locked on a mount from a more
# privileged namespace and must be kept when remounting it.
_LOCKED = (
    (1, MS_RDONLY), (2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC),
    (1024, MS_NOATIME), (2048, MS_NODIRATIME), (4096, MS_RELATIME),
)  # fmt: skip
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
DEV_LINKS = (
    ("/proc/self/fd", "fd"), ("/proc/self/fd/0", "stdin"), ("/proc/self/fd/1", "stdout"),
    ("/proc/self/fd/2", "stderr"), ("/proc/kcore", "core"), ("pts/ptmx", "ptmx"),
)  # fmt: skip
SMALL_TMPFS = 1 << 20

_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                       ctypes.c_ulong]  # fmt: skip
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p]  # fmt: skip


class SetupError(Exception):
    """A step of the set-up failed; the message names it."""


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    """``mount(2)``; raises :class:`SetupError` naming the target on failure."""
    enc = [None if v is None else v.encode() for v in (source, target, fstype)]
    if _libc.mount(enc[0], enc[1], enc[2], flags, data.encode() if data else None) != 0:
        err = ctypes.get_errno()
        raise SetupError(f"mount {source} on {target} ({fstype}): {os.strerror(err)}")


def _touch(path: str, directory: bool) -> None:
    os.makedirs(path if directory else os.path.dirname(path), exist_ok=True)
    if not directory and not os.path.exists(path):
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))


def bind(source: str, target: str, read_only: bool) -> None:
    """Bind ``source`` (recursively) at ``target``; remount read-only keeping locked flags."""
    _touch(target, os.path.isdir(source))
    mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        vfs = os.statvfs(target).f_flag
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        flags |= sum(ms for st, ms in _LOCKED if vfs & st)
        mount(None, target, None, flags)


def tmpfs(target: str, size: int, mode: str = "755") -> None:
    os.makedirs(target, exist_ok=True)
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},size={size}")


def dev(target: str) -> None:
    """A minimal ``/dev``: device nodes bound from the host, links, a new devpts instance."""
    os.makedirs(target, exist_ok=True)
    mount("tmpfs", target, "tmpfs", MS_NOSUID, f"mode=755,size={SMALL_TMPFS}")
    for name in DEVICES:
        bind(f"/dev/{name}", f"{target}/{name}", False)
    for link, name in DEV_LINKS:
        os.symlink(link, f"{target}/{name}")
    os.mkdir(f"{target}/pts")
    os.mkdir(f"{target}/shm")
    mount("devpts", f"{target}/pts", "devpts", MS_NOSUID | MS_NOEXEC,
          "newinstance,ptmxmode=0666,mode=620")  # fmt: skip


def loopback_up() -> None:
    """``ip link set lo up`` through ``SIOCSIFFLAGS`` (``netdevice(7)``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, 0x8913, req))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(sock, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP


def build(steps: list[dict[str, object]], root: str) -> None:
    """Build ``steps`` (:class:`agentworld.domains.terminal.layout.Mount` as dicts) under
    ``root`` and switch into it."""
    mount("aw-root", root, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=755,size={SMALL_TMPFS}")
    for step in steps:
        kind, dest, source = step["kind"], root + str(step["dest"]), str(step["source"])
        if kind in ("ro", "rw"):
            bind(source, dest, kind == "ro")
        elif kind == "symlink":
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            os.symlink(source, dest)
        elif kind == "tmpfs":
            tmpfs(dest, int(step["size"]))  # type: ignore[call-overload]
        elif kind == "proc":
            os.makedirs(dest, exist_ok=True)
            mount("proc", dest, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        elif kind == "dev":
            dev(dest)
        else:
            raise SetupError(f"unknown mount kind {kind!r}")
    os.chdir(root)
    os.mkdir(".old")
    if subprocess.run(["pivot_root", ".", ".old"], check=False).returncode != 0:
        raise SetupError("pivot_root failed")
    os.chdir("/")
    if _libc.umount2(b"/.old", MNT_DETACH) != 0:
        raise SetupError(f"umount /.old: {os.strerror(ctypes.get_errno())}")
    os.rmdir("/.old")
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP = 1, 4, 38, 22
_SECCOMP_MODE_FILTER, TIOCSTI = 2, 0x5412
# (AUDIT_ARCH_*, __NR_ioctl) from <linux/audit.h> and the kernel's syscall tables.
_ARCH = {"x86_64": (0xC000003E, 16), "aarch64": (0xC00000B7, 29)}


def _prctl(option: int, value: int, arg3: int = 0) -> None:
    if _libc.prctl(option, value, arg3, 0, 0) != 0:
        raise SetupError(f"prctl({option}): {os.strerror(ctypes.get_errno())}")


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)  # struct sock_filter, <linux/filter.h>


def deny_tiocsti() -> None:
    """Install a seccomp filter refusing ``ioctl(fd, TIOCSTI, ...)`` with ``EPERM`` for this
    process and its descendants (``seccomp(2)``, classic BPF over ``struct seccomp_data``).

    Every system call entry but the machine's native one is refused with ``EPERM`` as a whole:
    the filter checks ``seccomp_data.arch``, so the 32-bit entries (``int 0x80`` and
    ``sysenter`` on x86-64, AArch32 on arm64), which number ``ioctl`` differently (54 on
    i386), cannot type into the terminal; nor can the x32 numbers (``nr`` with bit 30 set) of
    the native entry. Another architecture than x86-64 or arm64 gets no filter."""
    arch = _ARCH.get(os.uname().machine)
    if arch is None:
        return
    audit_arch, nr_ioctl = arch
    ld_w_abs, jeq_k, jge_k, ret_k = 0x20, 0x15, 0x35, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    program = b"".join((
        _bpf(ld_w_abs, 4),  # seccomp_data.arch
        _bpf(jeq_k, audit_arch, 0, 6),  # another ABI (i386, AArch32): refused
        _bpf(ld_w_abs, 0),  # seccomp_data.nr
        _bpf(jge_k, 0x40000000, 4, 0),  # x32 system calls: refused
        _bpf(jeq_k, nr_ioctl, 0, 2),
        _bpf(ld_w_abs, 24),  # args[1], low 32 bits (the request is an unsigned int)
        _bpf(jeq_k, TIOCSTI, 1, 0),
        _bpf(ret_k, allow),
        _bpf(ret_k, deny),
    ))  # fmt: skip
    buf = ctypes.create_string_buffer(program)
    prog = struct.pack("HxxxxxxP", len(program) // 8, ctypes.addressof(buf))  # sock_fprog
    fprog = ctypes.create_string_buffer(prog)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    _prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog))


def _retitle(title: bytes) -> None:
    """Show ``title`` as this process's command line (``ps -ef``, ``/proc/1/cmdline``) instead
    of this script's source: the argument area (``proc(5)``, stat fields 48-49) is rewritten in
    place, as ``setproctitle`` does; Python keeps its own copy of the arguments."""
    with open("/proc/self/stat", "rb") as fh:
        fields = fh.read().rpartition(b")")[2].split()
    start, end = int(fields[45]), int(fields[46])
    if end - start > len(title):
        ctypes.memset(start, 0, end - start)
        ctypes.memmove(start, title, len(title))
        ctypes.memset(end - 1, ord(" "), 1)


def supervise(command: list[str]) -> int:
    """Run ``command`` as the only child of this pid 1 and reap orphans until it exits.

    Returns:
        ``command``'s exit status (128 + the signal that killed it).
    """
    _prctl(_PR_SET_DUMPABLE, 0)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    _retitle(b"init")
    # Python ignores SIGPIPE and SIGXFSZ; an ignored signal would survive exec.
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    deny_tiocsti()
    child = os.fork()
    if child == 0:
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code


def main(argv: list[str]) -> int:
    if len(argv) >= 4 and argv[1:3] == ["--init", "--"]:
        try:
            return supervise(argv[3:])
        except SetupError as exc:
            print(f"sandbox init failed: {exc}", file=sys.stderr)
            return 1
    if len(argv) < 5 or argv[3] != "--":
        print("usage: newroot.py [PLAN_JSON NEW_ROOT | --init] -- COMMAND...", file=sys.stderr)
        return 2
    steps, root, command = json.loads(argv[1]), argv[2], argv[4:]
    try:
        socket.sethostname("sandbox")
        loopback_up()
        build(steps, root)
    except (OSError, SetupError) as exc:
        print(f"sandbox set-up failed: {exc}", file=sys.stderr)
        return 1
    os.chdir(os.environ.get("HOME", "/"))
    try:
        return supervise(command)
    except SetupError as exc:
        print(f"sandbox init failed: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
