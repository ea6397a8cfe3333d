"""What the host reads about a sandboxed shell from ``/proc`` (``proc(5)``), where the agent
cannot forge it: whether the shell waits for input, its real working directory, and a pidfd of
a process that names it even after its pid is reused."""

from __future__ import annotations

import os

_READ_NR = {"x86_64": "0", "aarch64": "63"}.get(os.uname().machine)  # read(2), as /proc shows


def read_call(pid: int) -> tuple[str, str, str, str] | None:
    """The system call process ``pid`` is blocked in, as ``/proc/PID/syscall`` shows it (in
    hexadecimal but the number): ``(number, fd, buffer address, count)``, ``("running", "",
    "", "")`` for a running process; ``None`` where that cannot be read (an unknown
    architecture, no access)."""
    if _READ_NR is None:
        return None
    try:
        with open(f"/proc/{pid}/syscall", encoding="ascii") as fh:
            fields = fh.read().split()
    except OSError:
        return None
    fields += [""] * (4 - len(fields))
    return (fields[0], fields[1], fields[2], fields[3])


def reading_terminal(pid: int, expected: tuple[str, str, str, str] | None = None) -> bool:
    """Whether process ``pid`` is blocked in ``read`` on fd 0 (:func:`read_call`), as a shell
    is at its prompt; with ``expected``, in that very call (the same buffer and count: bash
    reads its command lines into a buffer of its own, the builtin ``read`` into others). True
    where that cannot be read, so the caller falls back to its other checks."""
    call = read_call(pid)
    if call is None:
        return True
    if expected is not None:
        return call == expected
    return is_terminal_read(call)


def is_terminal_read(call: tuple[str, str, str, str]) -> bool:
    """Whether ``call`` (:func:`read_call`) is a ``read`` on fd 0."""
    return call[:2] == (_READ_NR, "0x0")


def real_cwd(pid: int, shown: str) -> str:
    """The working directory of ``pid`` as the kernel knows it (``/proc/PID/cwd``, the path
    inside the sandbox), not ``$PWD``, which a command may set to anything; ``shown`` where it
    cannot be read. A removed directory loses its `` (deleted)`` suffix."""
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return shown
    return cwd.removesuffix(" (deleted)") if cwd.startswith("/") else shown


def pidfd(pid: int | None) -> int | None:
    """A pidfd of ``pid`` (``pidfd_open(2)``), which names that process even after its pid is
    reused; ``None`` when it is gone or unknown."""
    if pid is None:
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None
