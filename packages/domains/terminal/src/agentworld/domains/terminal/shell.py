"""A bash shell in a sandbox, driven through a pseudo-terminal with pexpect.

Completion of a command is detected with an invisible marker printed as ``PS1``
(:mod:`agentworld.domains.terminal.marker`: a random token per shell, the prompt's number, the
exit status, ``$PWD`` where it names the working directory); the host renders the prompt line
itself. A marker counts only when its number is past the last one seen, it ends the output,
the shell (not a command) holds the terminal's foreground (``tcgetpgrp``) and the shell is
blocked in the very ``read`` it waited in at its first prompt (``/proc/PID/syscall``: the same
buffer and count; the builtin ``read`` uses others): a command that prints the prompt
(``echo "${PS1@P}"``), then keeps running or reads the next actions itself with ``read``,
does not end its step. (Nor does a prompt read through readline: ``set -o emacs`` or ``vi``
turns line editing on, the shell's prompts then go unrecognised and the step ends by
restarting the shell.) Native code in the shell process (a loadable builtin, ``ptrace`` of
the shell) is not defended against. ``PS2`` carries a similar marker so an incomplete line
(an unclosed quote, a here-document) is noticed at once and cancelled with Ctrl-C, as a person
would. Terminal echo is off (``bash --noediting`` on a no-echo pty), so the command itself is
not part of the output. ``PROMPT_COMMAND``, ``PS1`` and ``PS2`` are read-only.

Before each prompt, processes left running in the background by the command are killed
(``builtin disown -a; builtin kill -9 -1`` inside the pid namespace), and after it the host
kills whatever is still there besides the shell (:mod:`agentworld.domains.terminal.reaper`):
every command runs to completion, no job outlives its step (this also ends fork bombs), and
episodes stay reproducible.

An action of several lines (a here-document, a multi-line ``for`` loop, a ``python3 - <<EOF``
script) runs as one unit, as bash runs the same text as a script: it is written to a file the
sandbox sees read-only (:data:`ACTION_FILE`) and run with ``source``, which parses and runs it
command by command in the shell itself (its variables, functions and directory persist). A
here-document's body is read from the text, not from the terminal; one never closed ends at
the end of the text with bash's warning; an unfinished ``if`` or quote is bash's syntax error,
naming the file and the line in the action. Typed line by line instead, a here-document's
continuation lines would meet ``PS2`` and be cancelled. (``eval`` would do the same but,
interactive, leaves a stale prompt after an unclosed quote and numbers lines by the whole
session.) So is a line longer than :data:`LINE_MAX` bytes, which the terminal's line buffer
would cut (4,095 bytes, ``N_TTY_BUF_SIZE``): what runs is what is recorded. ``$?`` at the
start of such an action is the previous command's status, as at a typed prompt; the timeout
applies to the action as a whole.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import pexpect
from agentworld.domains.terminal.hostfiles import write_file
from agentworld.domains.terminal.limits import Limits
from agentworld.domains.terminal.marker import NEUTRAL, Marker, MarkerFinder, init_line
from agentworld.domains.terminal.output import CommandResult, OutputCollector, clean_output
from agentworld.domains.terminal.procstate import (
    is_terminal_read,
    read_call,
    reading_terminal,
    real_cwd,
)
from agentworld.domains.terminal.prompt import HOME
from agentworld.domains.terminal.ptysandbox import SandboxPty
from agentworld.domains.terminal.reaper import kill_leftovers
from agentworld.domains.terminal.sandbox import INPUT_DIR

GRACE_S = 5.0  # for the prompt after ^C; a loaded machine can take seconds
# ^C is repeated this often within GRACE_S, as a user would: some programs survive the first
# (node's REPL asks for a second one), and a ^C can land before the command has started.
INTERRUPT_EVERY_S = 1.0
TIMEOUT_NOTE = "[command timed out after {t:g} s: interrupted]"
RESTART_NOTE = "[command timed out after {t:g} s: shell restarted]"
EXIT_NOTE = "[shell exited: a new shell was started]"
READ_POLL_S = 0.0002  # first wait before looking again at a shell that printed its prompt but is
# not reading; it doubles up to READ_POLL_MAX_S while no output comes (a builtin that keeps
# running after printing a marker costs the host little)
READ_POLL_MAX_S = 0.05
LEARN_READ_S = 5.0  # for the new shell to block in its first read at its first prompt
LINE_MAX = 4000  # bytes of one typed line; longer lines are passed through a file
ACTION_FILE = f"{INPUT_DIR}/action"  # inside the sandbox: a multi-line or long action


class Shell:
    """Interactive bash in a sandbox rooted at an episode directory.

    Args:
        root: Writable episode root, mounted as the home directory; chowned to
            the sandbox uid at start when running as root.
        limits: Resource and time limits.
        sandbox: Sandbox kind (default :func:`detect_sandbox`).
        ro_binds: ``(host directory, path under /opt)`` pairs bound read-only
            (:func:`~agentworld.domains.terminal.sandbox.sandbox_argv`).

    Raises:
        RuntimeError: no sandbox can run here, or the shell does not start.
    """

    def __init__(
        self, root: Path, limits: Limits | None = None, sandbox: str | None = None,
        ro_binds: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self._pty = SandboxPty(root, limits, sandbox, ro_binds)
        self.root, self.limits, self.kind, self.uid = (
            self._pty.root, self._pty.limits, self._pty.kind, self._pty.uid,
        )  # fmt: skip
        self._meta = self._pty.meta
        self._token = b""
        self._prompts = 0  # number of the last prompt seen
        self._shell_pgrp: int | None = None
        self._prompt_read: tuple[str, str, str, str] | None = None  # the shell's read at a prompt
        self._markers = MarkerFinder(b"")
        self._last: CommandResult | None = None

    def start(self, cwd: str | None = None, exit_code: int = 0) -> CommandResult:
        """Start (or restart) the shell; returns the initial prompt with empty output."""
        self._kill()
        self._token = secrets.token_hex(8).encode()
        self._prompts, self._shell_pgrp, self._prompt_read = 0, None, None
        self._markers = MarkerFinder(self._token)
        self._pty.spawn(dimensions=(50, 200))  # a wide terminal: short listings fit on one line
        self._child.sendline(init_line(self._token.decode(), cwd or HOME, exit_code))
        collector = OutputCollector(0)
        status, match = self._collect(collector, time.monotonic() + 10.0)
        if status != "prompt" or match is None:
            self._kill()
            said, _ = clean_output(bytes(collector.head + collector.tail), 2000)
            raise RuntimeError(
                f"the sandboxed shell ({self.kind}) did not start ({status}): {said.strip()!r}"
            )
        self._pty.pin_init()
        return self._result(b"", match)

    def run(self, command: str, timeout_s: float | None = None) -> CommandResult:
        """Run one command line and wait for the next prompt.

        Args:
            command: The action's text: one line, or several run as one script (passed
                through a file and run with ``source``, as is a line over :data:`LINE_MAX`
                bytes). ``\r\n`` counts as ``\n``; trailing line breaks are dropped
                when what is left is one line.
            timeout_s: Wall-clock limit for the whole action, seconds (default
                ``limits.command_timeout_s``).
                On expiry Ctrl-C is sent (again every ``INTERRUPT_EVERY_S``); if no
                prompt follows within ``GRACE_S`` the shell is killed and restarted in
                the same directory.

        Raises:
            ValueError: ``command`` cannot be typed: it is not valid Unicode text (a lone
                surrogate) or holds a NUL character.
        """
        try:
            command.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"action is not valid text: {exc.reason} at index {exc.start} of {command!r:.200}"
            ) from None
        if "\x00" in command:
            raise ValueError(f"action holds a NUL character: {command!r:.200}")
        command = command.replace("\r\n", "\n")
        if "\n" not in command.rstrip("\n"):
            command = command.rstrip("\n")
        if self._child is None:
            self.start()
        self._drain()
        timeout = self.limits.command_timeout_s if timeout_s is None else timeout_s
        last = self._last
        collector = OutputCollector(self.limits.output_bytes * 4)
        self._child.sendline(self._typed(command))
        status, match = self._collect(collector, time.monotonic() + timeout)
        timed_out = status == "timeout"
        if status in ("timeout", "ps2"):
            collector.feed(b"^C")
            status, match = self._interrupt(collector)
        if status == "prompt" and match is not None:
            kill_leftovers(self._child.pid, self._shell_pgrp)
            result = self._result(collector.head + collector.tail[: match.start], match)
            if timed_out:
                result.output = _with_note(result.output, TIMEOUT_NOTE.format(t=timeout))
                result.timed_out = True
            return result
        raw = collector.head + collector.tail
        if status == "eof" and not timed_out:
            result = self.start()
            note = EXIT_NOTE
        else:
            result = self.start(cwd=last.cwd if last else None, exit_code=130)
            note = RESTART_NOTE.format(t=timeout)
        out, truncated = clean_output(bytes(raw), self.limits.output_bytes)
        result.output = _with_note(out, note)
        result.timed_out, result.restarted, result.truncated = (
            timed_out or status != "eof",
            True,
            truncated,
        )
        return result

    def close(self) -> None:
        """Kill the sandbox and delete its identity files. Idempotent."""
        self._kill()
        self._pty.close()

    def _typed(self, command: str) -> str:
        """What to type for ``command``: itself when it is one line of at most
        :data:`LINE_MAX` bytes; else one short line that restores ``$?`` (``__aw_rc``, set
        before each prompt) and sources the command from :data:`ACTION_FILE`."""
        if "\n" not in command and len(command.encode("utf-8")) <= LINE_MAX:
            return command
        write_file(self._meta / "input", Path(ACTION_FILE).name, command.encode(), 0o644)
        return f'(exit "$__aw_rc"); builtin source {ACTION_FILE}'

    def _result(self, raw: bytes, marker: Marker) -> CommandResult:
        out, truncated = clean_output(bytes(raw), self.limits.output_bytes)
        cwd = self._real_cwd(marker.shown or HOME)
        self._last = CommandResult(
            out, marker.prompt(cwd), marker.exit_code, cwd, truncated=truncated
        )
        return self._last

    def _collect(self, col: OutputCollector, deadline: float) -> tuple[str, Marker | None]:
        """Read output into ``col`` until a genuine prompt (``"prompt"``, its marker), the
        ``PS2`` marker (``"ps2"``), EOF (``"eof"``) or ``deadline`` (``"timeout"``). Markers
        that do not count get their first byte replaced by :data:`NEUTRAL`."""
        assert self._child is not None
        poll = None  # seconds to the next look at a shell whose marker ends the output
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout", None
            try:
                chunk = self._child.read_nonblocking(65536, timeout=min(left, poll or 0.5))
                col.feed(chunk)
                poll = None
            except pexpect.TIMEOUT:
                if poll is None:
                    continue
                poll = min(poll * 2, READ_POLL_MAX_S)
            except pexpect.EOF:
                return "eof", None
            pos, waiting = 0, False
            while (found := self._markers.next(col.tail, pos)) is not None:
                pos, marker = found
                if marker is None:
                    continue
                if self._genuine(marker.number) and marker.end == len(col.tail):
                    if not self._reading():
                        waiting = True  # (or a forged one, if a builtin keeps running)
                        break
                    self._prompts = marker.number
                    if self._shell_pgrp is None:
                        self._shell_pgrp = self._foreground()
                        self._prompt_read = self._learn_read()
                    return "prompt", marker
                col.tail[marker.start] = NEUTRAL  # forged: keep its text, not its marker
            poll = (poll or READ_POLL_S) if waiting else None
            if self._markers.has_ps2(col.tail):
                genuine = self._genuine(None)
                self._markers.drop_ps2(col.tail, neutralise=not genuine)
                if genuine:
                    return "ps2", None

    def _learn_read(self) -> tuple[str, str, str, str] | None:
        """The ``read`` the new shell blocks in at its first prompt (:func:`read_call`), before
        any action ran; ``None`` where it cannot be seen (then any ``read`` on fd 0 counts)."""
        if self._shell_pgrp is None:
            return None
        deadline = time.monotonic() + LEARN_READ_S
        while time.monotonic() < deadline:
            # One sample, both checked and kept: a second read of /proc could find the shell
            # blocked after the first found it running, and "running" would be learned.
            call = read_call(self._shell_pgrp)
            if call is None:
                return None
            if is_terminal_read(call):
                return call
            time.sleep(READ_POLL_S)
        return None

    def _foreground(self) -> int | None:
        assert self._child is not None
        try:
            return os.tcgetpgrp(self._child.child_fd)
        except OSError:
            return None

    def _genuine(self, number: int | None) -> bool:
        """Whether a prompt marker (``number``; ``None`` for ``PS2``) may be the shell's: a
        prompt past the last one seen, printed while the shell holds the terminal's
        foreground. A prompt also has to end the output and find the shell waiting for input
        (:meth:`_reading`): a builtin that prints the marker (the counter in it is the shell's
        own variable) and then keeps running does not end its step."""
        if number is not None and number <= self._prompts:
            return False
        return self._shell_pgrp is None or self._foreground() == self._shell_pgrp

    def _reading(self) -> bool:
        """Whether the shell waits for input at its terminal in the ``read`` of its prompts
        (:func:`reading_terminal`); True before the first prompt, when its pid is not known
        yet."""
        return self._shell_pgrp is None or reading_terminal(self._shell_pgrp, self._prompt_read)

    def _real_cwd(self, shown: str) -> str:
        """The shell's real working directory (:func:`real_cwd`), ``shown`` before the first
        prompt."""
        return shown if self._shell_pgrp is None else real_cwd(self._shell_pgrp, shown)

    def _interrupt(self, col: OutputCollector) -> tuple[str, Marker | None]:
        """Send ^C every :data:`INTERRUPT_EVERY_S` until a prompt (or EOF) or :data:`GRACE_S`."""
        assert self._child is not None
        deadline = time.monotonic() + GRACE_S
        while True:
            self._child.sendintr()
            status, match = self._collect(col, min(deadline, time.monotonic() + INTERRUPT_EVERY_S))
            if status != "timeout" or time.monotonic() >= deadline:
                return status, match

    def _drain(self) -> None:
        assert self._child is not None
        try:
            while self._child.read_nonblocking(65536, timeout=0):
                pass
        except (pexpect.TIMEOUT, pexpect.EOF):
            pass

    @property
    def _child(self) -> pexpect.spawn | None:
        """The pexpect child of the sandbox (``None`` when none runs)."""
        return self._pty.child

    def _kill(self) -> None:
        """Kill the whole sandbox from the host (:meth:`SandboxPty.kill`)."""
        self._pty.kill()
        self._last = None


def _with_note(output: str, note: str) -> str:
    if output and not output.endswith("\n"):
        output += "\n"
    return output + note + "\n"


__all__ = ["CommandResult", "Shell"]
