"""``Tty``: an interactive bash on a sandboxed pty, driven by keystrokes, seen through pyte.

The sandbox is the terminal domain's (:class:`agentworld.domains.terminal.ptysandbox.SandboxPty`:
no network, the episode root as ``/home/agent``, resource limits, a memory cgroup, every
process killed with it). Unlike the command-line terminal, nothing here waits for a prompt:
keystrokes are sent as a person types them and the screen is whatever the programs drew.

Timing: after each item's keystrokes, the driver reads the pty for the item's ``duration``
(:mod:`agentworld.domains.tty.keys`); after the last item it waits until the terminal
*settles*: no output for :data:`QUIET_S` while no process of the sandbox is running (every one
sleeps or is stopped, ``/proc/PID/stat``), at most :data:`SETTLE_MAX_S` more. So a slow start
(a loaded machine, python3's first import) still shows on the screen it ends, and a program
that redraws on a timer (``top``) or waits (``sleep``) ends the step after its duration.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pexpect
from agentworld.domains.terminal.limits import Limits
from agentworld.domains.terminal.ptysandbox import SandboxPty
from agentworld.domains.terminal.reaper import namespace_processes
from agentworld.domains.tty.keys import Keystrokes
from agentworld.domains.tty.screen import COLUMNS, ROWS, TtyScreen, make_stream, render

QUIET_S = 0.05  # seconds without output (and no running process) that end a step
SETTLE_MAX_S = 3.0  # seconds a step may wait past its durations for the terminal to settle
START_S = 15.0  # seconds the shell has to show its first prompt
PROMPT = "user@sandbox:\\w$ "
BASH = ["bash", "--norc", "--noprofile", "-i"]
ENV = {"TERM": "xterm", "PS1": PROMPT, "HISTFILE": "/dev/null", "PAGER": "less", "EDITOR": "vi",
       "LESSHISTFILE": "-", "PYTHON_HISTORY": "/dev/null"}  # fmt: skip


@dataclass(slots=True)
class Typed:
    """What one action did: the screen after it, whether the shell exited (and a new one was
    started), and the wall-clock seconds it took."""

    screen: str
    restarted: bool
    seconds: float


class Tty:
    """An interactive bash in the terminal domain's sandbox, on a ``rows`` x ``columns`` pty.

    Args:
        root: Writable episode root (``/home/agent`` inside).
        limits: Resource limits (:class:`~agentworld.domains.terminal.limits.Limits`).
        sandbox: Sandbox kind (default: the detected one).
        rows: Terminal height (default 24, tmux's).
        columns: Terminal width (default 80).

    Raises:
        RuntimeError: no sandbox can run here.
    """

    def __init__(self, root: Path, limits: Limits | None = None, sandbox: str | None = None,
                 rows: int = ROWS, columns: int = COLUMNS) -> None:  # fmt: skip
        self._pty = SandboxPty(root, limits, sandbox)
        self.kind, self.rows, self.columns = self._pty.kind, rows, columns
        self.screen = TtyScreen(columns, rows)
        self._stream = make_stream(self.screen)
        self._eof = False

    def start(self) -> str:
        """Start (or restart) the shell on a fresh screen; returns the screen with its prompt.

        Raises:
            RuntimeError: the shell showed no prompt within :data:`START_S` seconds.
        """
        self.screen = TtyScreen(self.columns, self.rows)
        self._stream = make_stream(self.screen)
        self._eof = False
        self._pty.spawn(BASH, dimensions=(self.rows, self.columns), echo=True, env=ENV)
        deadline = time.monotonic() + START_S
        while "$" not in render(self.screen) and time.monotonic() < deadline and not self._eof:
            self._read(deadline)
        if "$" not in render(self.screen):
            text = render(self.screen)
            self._pty.kill()
            raise RuntimeError(f"the sandboxed shell ({self.kind}) showed no prompt: {text!r:.300}")
        self._pty.pin_init()
        self._settle()
        return render(self.screen)

    def type(self, items: list[Keystrokes]) -> Typed:
        """Send each item's keystrokes, reading the screen for its duration, then wait until the
        terminal settles. A shell that exits (``exit``, ``C-d``) is restarted on a fresh screen
        (``restarted``)."""
        t0 = time.monotonic()
        if self._pty.child is None:
            self.start()
        for item in items:
            self._send(item.to_bytes(self.screen.application_cursor))
            self._read(time.monotonic() + item.duration, until_deadline=True)
            if self._eof:
                break
        if not self._eof:
            self._settle()
        restarted = self._eof
        if restarted:
            self.start()
        return Typed(render(self.screen), restarted, time.monotonic() - t0)

    def foreground(self) -> str:
        """The name of the foreground program (``/proc/PGRP/comm`` of the terminal's foreground
        process group): ``bash`` at the prompt, ``python3``, ``less``, ``vim``, ``top``...;
        ``""`` when it cannot be read."""
        child = self._pty.child
        if child is None:
            return ""
        try:
            pgrp = os.tcgetpgrp(child.child_fd)
            with open(f"/proc/{pgrp}/comm", encoding="utf-8", errors="replace") as fh:
                return fh.read().strip()
        except OSError:
            return ""

    def close(self) -> None:
        """Kill every process of the sandbox and delete its identity files. Idempotent."""
        self._pty.close()

    def _send(self, data: bytes) -> None:
        child = self._pty.child
        if child is None or not data:
            return
        try:
            child.send(data)
        except OSError:
            self._eof = True

    def _read(self, deadline: float, until_deadline: bool = False) -> bool:
        """Feed the screen with what the pty prints until ``deadline`` (``until_deadline``) or the
        first chunk; returns whether anything came."""
        child = self._pty.child
        got = False
        while child is not None and not self._eof:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                chunk = child.read_nonblocking(65536, timeout=min(left, 0.5))
            except pexpect.TIMEOUT:
                continue
            except (pexpect.EOF, OSError):
                self._eof = True
                break
            got = True
            self._stream.feed(chunk)
            if self.screen.replies:
                replies, self.screen.replies = bytes(self.screen.replies), bytearray()
                self._send(replies)
            if not until_deadline:
                break
        return got

    def _settle(self) -> None:
        deadline = time.monotonic() + SETTLE_MAX_S
        while time.monotonic() < deadline and not self._eof:
            if self._read(min(deadline, time.monotonic() + QUIET_S)):
                continue
            if not self._running():
                return

    def _running(self) -> bool:
        """Whether a process of the sandbox is running or in uninterruptible sleep (R or D)."""
        child = self._pty.child
        if child is None:
            return False
        _, pids = namespace_processes(child.pid)
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
                    state = fh.read().rpartition(")")[2].split()[0]
            except (OSError, IndexError):
                continue
            if state in ("R", "D"):
                return True
        return False


__all__ = ["QUIET_S", "SETTLE_MAX_S", "Tty", "Typed"]
