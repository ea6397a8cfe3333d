"""Which command lines give output that is not a function of the episode so far.

A simulator can only be exact where the real terminal's answer is determined by the commands
the episode ran: output of the clock (``date``, ``uptime``, the modification times ``ls -l`` and
``stat`` show of files the episode wrote: the sandbox dates its set-up files 1 January 2024, so a
listing of those alone is deterministic),
of process ids (``ps``, ``$$``, ``jobs -l``, a background job's ``[1] PID``), of randomness
(``$RANDOM``, ``mktemp``, ``shuf``, ``/dev/urandom``) or of the host's changing state (``df``,
``free``) is not. Fidelity reports split exact match on it
(:func:`agentworld.core.evaluate.transitions`).
"""

from __future__ import annotations

import re

from agentworld.domains.terminal.consistency import command_words

#: Commands whose output depends on the clock, process ids, randomness or the host's load.
NONDETERMINISTIC_COMMANDS = frozenset({
    "date", "uptime", "cal", "ncal", "time", "times", "ps", "pgrep", "pidof", "top", "htop",
    "free", "vmstat", "iostat", "df", "who", "w", "last", "mktemp", "tempfile", "shuf",
    "uuidgen", "sar", "mpstat",
})
#: Commands that show files' times: nondeterministic where the output shows a time of day.
TIME_LISTING_COMMANDS = frozenset({"stat"})
# $RANDOM / $SRANDOM, $$ / $BASHPID / $PPID / $!, $SECONDS / $EPOCHSECONDS / $EPOCHREALTIME,
# the kernel's random devices and the process table in /proc
_VOLATILE = re.compile(
    r"\$\{?(?:S?RANDOM|BASHPID|PPID|SECONDS|EPOCHSECONDS|EPOCHREALTIME)\b|\$\$|\$!"
    r"|/dev/u?random|/proc/(?:self|\d+|loadavg|uptime|stat|meminfo)\b"
    r"|\bopenssl\s+rand\b|\brandom\.|\btime\.time\b|\bdatetime\.|\buuid\b"
)
# ls with a long or time-sorted listing (-l, -t, -la, --full-time, ...) shows modification times
_LS_TIMES = re.compile(r"(?:^|[;&|(]\s*|\bdo\s+|\bthen\s+)ls\s+(?:[^;&|]*\s)?"
                       r"-(?:[a-zA-Z]*[lt]|-full-time|-time)")
# a time of day (ls -l shows HH:MM for files of the last six months, stat HH:MM:SS)
_CLOCK = re.compile(r"\b\d{2}:\d{2}\b")
# the `time` keyword (a prefix word, not a command of its own) prints how long the command took
_TIMED = re.compile(r"(?:^|[;&|({]\s*|\bdo\s+|\bthen\s+)time\s")
# a command sent to the background prints its job number and process id
_BACKGROUND = re.compile(r"(?<![&>|])&(?![&>])\s*(?:$|[^&>])")


def is_deterministic(command: str, output: str | None = None) -> bool:
    """Whether the output of ``command`` (one command line) is a function of the episode so far:
    ``False`` when it runs a command of :data:`NONDETERMINISTIC_COMMANDS`, reads a volatile
    variable or device (``$RANDOM``, ``$$``, ``/dev/urandom``, ...), is timed (``time``) or starts
    a background job; when it shows files' times (``ls -l``, ``ls -t``, ``stat``), ``False`` if
    the real ``output`` shows a time of day (a file the episode wrote, or ``stat``'s change
    time), or when ``output`` is not given; ``True`` otherwise."""
    words = command_words(command)
    if words & NONDETERMINISTIC_COMMANDS:
        return False
    line = command.strip()
    if _VOLATILE.search(line) or _TIMED.search(line):
        return False
    if (words & TIME_LISTING_COMMANDS or _LS_TIMES.search(line)) and (
            output is None or _CLOCK.search(output)):
        return False
    return not _BACKGROUND.search(command.replace("2>&1", "").replace(">&2", ""))
