"""The invisible prompt marker of the terminal domain's shell: what bash is told to print, and
how the host finds it in the terminal's output.

Before each prompt the shell's ``PROMPT_COMMAND`` (read-only) sets one variable,
``__aw_k``, to ``N:STATUS:OK:CWD``: ``N`` counts the shell's prompts, ``STATUS`` is the exit
status of the last command, ``OK`` is ``1`` when ``$PWD`` is an absolute path naming the
working directory (``[[ $PWD -ef . ]]``; a path through a symlink, as bash's ``\\w`` shows it)
and ``CWD`` is then ``$PWD``, else ``0`` and nothing. ``PS1`` (read-only) prints
``\\x1e<token>:$__aw_k\\x1f$ \\x1e<token>.\\x1f``, where ``<token>`` is random per shell; in
``CWD``, ``\\x1f`` is written ``\\x1f\\x1f`` and ``\\x1e`` is written ``\\x1f\\x1d``, so a
marker holds no ``\\x1e`` but its two own. All the host reads is in that one variable, which
the ``PROMPT_COMMAND`` rewrites before every prompt: a command that makes it read-only stops
the counter, and with it every step, which restarts the shell. ``PS2`` prints
``\\x1e<token>>\\x1f> ``.

The host does not show what bash printed: it renders the prompt line itself
(:func:`~agentworld.domains.terminal.prompt.render_prompt`) from the status and ``CWD`` (the
real working directory when ``OK`` is ``0``). With ``stty olcuc`` the terminal turns the
marker to upper case; it is found all the same, and the prompt line is shown in upper case, as
the terminal would show it.

Finding markers is linear in the output: an end ``\\x1e<token>.\\x1f`` is searched for first,
then the last start before it, so a flood of starts that never end costs one scan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentworld.domains.terminal.prompt import render_prompt

NEUTRAL = 0x1D  # written over the first byte of a marker that does not count


def init_line(token: str, cwd: str, exit_code: int) -> str:
    """The line typed at a new shell: the marker's ``PROMPT_COMMAND``, ``PS1`` and ``PS2``
    (read-only), no history, working directory ``cwd`` and ``$?`` = ``exit_code``. The
    ``PROMPT_COMMAND`` also sets ``__aw_rc`` to the status (long actions restore ``$?`` from
    it) and kills what the command left running (``builtin kill -9 -1`` in the sandbox's pid
    namespace)."""
    command = (
        "__aw_k=$((${__aw_k%%:*}+1)):$?; __aw_rc=${__aw_k#*:}; builtin disown -a; "
        "builtin kill -9 -1 2>/dev/null; builtin shopt -s promptvars; "
        "if [[ ${PWD-} == /* && ${PWD-} -ef . ]]; "
        "then __aw_k+=\":1:${PWD//\\x1f/\\x1f\\x1f}\"; else __aw_k+=:0:; fi; "
        "__aw_k=${__aw_k//\\x1e/\\x1f\\x1d}"
    )
    return (
        f"__aw_k=0; PROMPT_COMMAND=$'{command}'; "
        f"PS1=$'\\x1e{token}:${{__aw_k}}\\x1f$ \\x1e{token}.\\x1f'; "
        f"PS2=$'\\x1e{token}>\\x1f> '; readonly PROMPT_COMMAND PS1 PS2; unset HISTFILE; "
        f"cd -- {_quote(cwd)} 2>/dev/null; history -c; (exit {int(exit_code)})"
    )


@dataclass(frozen=True, slots=True)
class Marker:
    """One complete prompt marker in the output.

    Attributes:
        start: Offset of its first byte in the searched buffer.
        end: Offset just past it.
        number: The prompt's number.
        exit_code: Exit status of the last command.
        shown: ``$PWD`` when it names the working directory, else ``None``.
        upper: The terminal turned it to upper case (``stty olcuc``).
    """

    start: int
    end: int
    number: int
    exit_code: int
    shown: str | None
    upper: bool

    def prompt(self, cwd: str) -> str:
        """The prompt line to show, given the real working directory ``cwd``."""
        line = render_prompt(cwd if self.shown is None or self.upper else self.shown,
                             self.exit_code)  # fmt: skip
        return line.upper() if self.upper else line


class MarkerFinder:
    """Finds the markers of the shell with ``token`` (hexadecimal, lower case) in its output."""

    def __init__(self, token: bytes) -> None:
        self.token = token
        tok = re.escape(token)
        self._end = re.compile(rb"\x1e" + tok + rb"\.\x1f", re.IGNORECASE)
        self._starts = (b"\x1e" + token + b":", b"\x1e" + token.upper() + b":")
        self._body = re.compile(
            rb"\x1e" + tok + rb":(\d+):(\d+):([01]):((?:[^\x1e\x1f]|\x1f[\x1d\x1f])*)"
            rb"\x1f\$ \x1e" + tok + rb"\.\x1f",
            re.IGNORECASE,
        )
        self.ps2 = (b"\x1e" + token + b">\x1f", b"\x1e" + token.upper() + b">\x1f")

    def next(self, buf: bytes | bytearray, pos: int) -> tuple[int, Marker | None] | None:
        """The first marker end at or after ``pos``: ``(offset past it, the marker or None
        when what precedes it is no marker)``; ``None`` when no end follows ``pos``."""
        end = self._end.search(buf, pos)
        if end is None:
            return None
        start = max(buf.rfind(s, pos, end.start()) for s in self._starts)
        match = self._body.fullmatch(buf, start, end.end()) if start >= 0 else None
        if match is None:
            return end.end(), None
        shown = None
        if match.group(3) == b"1":
            raw = re.sub(rb"\x1f([\x1d\x1f])", _unescape, match.group(4))
            shown = raw.decode("utf-8", errors="replace")
        upper = buf[start + 1 : start + 1 + len(self.token)] != self.token
        marker = Marker(start, end.end(), int(match.group(1)), int(match.group(2)), shown, upper)
        return end.end(), marker

    def has_ps2(self, buf: bytes | bytearray) -> bool:
        """Whether ``buf`` holds the ``PS2`` marker."""
        return any(p in buf for p in self.ps2)

    def drop_ps2(self, buf: bytearray, neutralise: bool) -> None:
        """Remove every ``PS2`` marker from ``buf`` (``neutralise``: keep its text, mark its
        first byte :data:`NEUTRAL` instead)."""
        for p in self.ps2:
            buf[:] = buf.replace(p, bytes([NEUTRAL]) + p[1:] if neutralise else b"")


def _unescape(match: re.Match[bytes]) -> bytes:
    return b"\x1f" if match.group(1) == b"\x1f" else b"\x1e"


def _quote(path: str) -> str:
    return "'" + path.replace("'", "'\\''") + "'"


__all__ = ["NEUTRAL", "Marker", "MarkerFinder", "init_line"]
