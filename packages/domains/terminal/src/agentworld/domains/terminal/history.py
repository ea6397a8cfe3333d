"""A user's own command lines (``--set commands=FILE``), replayed in the sandbox.

:func:`read_history` reads a shell history or a plain list of command lines:

* bash ``~/.bash_history``, with or without ``HISTTIMEFORMAT`` time stamps (a ``#1700000000``
  line before a command);
* zsh extended history (``: 1700000000:0;git status``; a command continued over lines ends
  each but the last with ``\\``);
* a plain list, one command line per line (blank lines and ``# comments`` skipped).

Lines the sandbox cannot run sensibly are skipped, each with a reason (:func:`refusal`):
programs that take over the terminal or wait for a person (editors, pagers, REPLs, ``ssh``,
``top``, ``git commit`` without a message), ``sudo``/``su``/``doas``, commands that leave or
stop the shell (``exit``, ``reboot``), and lines that are no single printable-ASCII command
line of at most 4,095 characters (what the terminal's action space holds).

:func:`episodes_of` splits the rest into episodes of consecutive commands: at most
``size`` each, and a new episode after a pause of over :data:`GAP_S` seconds where time
stamps tell. :class:`HistoryPolicy` (``name = "history"``) replays one episode per task.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.core.types import Action, Observation, Task
from agentworld.domains.terminal.policy_base import SeededPolicy, steps_taken

GAP_S = 30 * 60
EPISODE_COMMANDS = 8
MAX_LINE = 4095
MAX_FILE_BYTES = 16 << 20
_ZSH = re.compile(r"^: (\d+):\d+;(.*)$")
_STAMP = re.compile(r"^#(\d{9,11})$")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
INTERACTIVE = frozenset(
    "vi vim nvim view vimdiff nano pico emacs ed joe micro less more most man info pinfo top "
    "htop btop atop iotop watch ssh scp sftp mosh telnet ftp nc netcat tmux screen mc ranger "
    "nnn fzf irb ipython jupyter ghci lua R gdb lldb pdb mysql psql mongo redis-cli sqlite3 "
    "bc dc crontab passwd visudo vipw mutt alpine lynx w3m links tig".split())
REPLS = frozenset("python python3 python2 node bash sh zsh fish dash ksh tclsh perl ruby".split())
PRIVILEGED = frozenset("sudo su doas pkexec".split())
LEAVES = frozenset("exit logout reboot shutdown poweroff halt fg bg disown exec".split())


@dataclass
class History:
    """The command lines of a history file: ``commands`` (``(time stamp or None, line)``,
    in order) and ``skipped`` (reason -> how many lines)."""

    commands: list[tuple[int | None, str]] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        """``"42 command lines, 5 skipped (sudo 3, interactive 2)"``."""
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items()))
        total = sum(self.skipped.values())
        return (f"{len(self.commands)} command lines, {total} skipped"
                + (f" ({reasons})" if reasons else ""))


_MESSAGE_OPTIONS = {"--message", "--file", "--no-edit", "--fixup", "--reuse-message", "-C"}
_SHORT_MESSAGE = re.compile(r"-[A-Za-z]*[mF]")  # -m MSG, -mMSG, -am MSG, -qm MSG, -aF FILE


def refusal(line: str) -> str | None:
    """Why the sandbox cannot run ``line`` sensibly (``"sudo"``, ``"interactive"``,
    ``"leaves the shell"``, ``"not printable ASCII"``, ``"too long"``), else ``None``."""
    if len(line) > MAX_LINE:
        return "too long"
    if not line.isascii() or not line.isprintable():
        return "not printable ASCII"
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        words = line.split()
    while words and _ASSIGN.match(words[0]):
        words = words[1:]  # FOO=1 cmd
    if words and words[0] in ("env", "nohup", "time", "nice", "command"):
        words = [w for w in words[1:] if not w.startswith("-") and not _ASSIGN.match(w)]
    if not words:
        return None
    first = words[0].rsplit("/", 1)[-1]
    if first in PRIVILEGED:
        return "sudo"
    if first in LEAVES:
        return "leaves the shell"
    if first in INTERACTIVE or (first in REPLS and len(words) == 1):
        return "interactive"
    if first == "git" and "commit" in words[1:2] and not any(
            w.split("=")[0] in _MESSAGE_OPTIONS or _SHORT_MESSAGE.match(w) for w in words[2:]):
        return "interactive"  # opens an editor for the message
    return None


def read_history(path: Path) -> History:
    """The command lines of the history or list at ``path`` (see the module), with the
    skipped lines counted by reason.

    Raises:
        ValueError: ``path`` is not a file, or is over :data:`MAX_FILE_BYTES`.
        OSError: it cannot be read.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"commands {str(path)!r} is not a file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"commands {str(path)!r} is over {MAX_FILE_BYTES} bytes")
    text = path.read_bytes().decode("utf-8", errors="replace").replace("\r\n", "\n")
    out, stamp, pending = History(), None, ""
    for raw in text.split("\n"):
        if pending:  # a zsh command continued over lines
            raw, pending = pending + "\n" + raw, ""
        zsh = _ZSH.match(raw)
        if zsh:
            stamp, raw = int(zsh.group(1)), zsh.group(2)
            if raw.endswith("\\"):
                pending = f": {zsh.group(1)}:0;{raw[:-1]}"
                continue
        elif _STAMP.match(raw.strip()):
            stamp = int(raw.strip()[1:])
            continue
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "\n" in line:
            out.skipped["several lines"] += 1
        elif (why := refusal(line)) is not None:
            out.skipped[why] += 1
        else:
            out.commands.append((stamp, line))
        stamp = None
    return out


def episodes_of(history: History, size: int = EPISODE_COMMANDS) -> list[list[str]]:
    """Consecutive command lines in episodes of at most ``size``, a new one after a pause of
    over :data:`GAP_S` seconds between time-stamped commands."""
    episodes: list[list[str]] = []
    last: int | None = None
    for stamp, line in history.commands:
        gap = stamp is not None and last is not None and stamp - last > GAP_S
        if not episodes or len(episodes[-1]) >= size or gap:
            episodes.append([])
        episodes[-1].append(line)
        last = stamp if stamp is not None else last
    return episodes


class HistoryPolicy(SeededPolicy):
    """Replays a user's command lines (``name = "history"``); a
    :class:`~agentworld.core.protocols.TaskingPolicy` whose task ``seed`` is episode ``seed %
    num_tasks`` of :func:`episodes_of`.

    Args:
        episodes: Command lines per episode (non-empty lists).
        source: The history's name, for task instructions (its file name).
        setup: The home directory every task starts with (``{"dirs", "files"}``).

    Raises:
        ValueError: no episode.
    """

    name = "history"

    def __init__(self, episodes: Sequence[Sequence[str]], source: str = "history",
                 setup: dict[str, Any] | None = None, seed: int = 0) -> None:
        super().__init__(seed)
        self.episodes = [list(e) for e in episodes if e]
        if not self.episodes:
            raise ValueError("no command line to replay")
        self.num_tasks: int | None = len(self.episodes)
        self.source, self.setup = source, dict(setup or {})

    def task(self, seed: int) -> Task:
        """The task replaying episode ``seed % num_tasks``; its commands are
        ``setup["commands"]``."""
        i = seed % len(self.episodes)
        lines = self.episodes[i]
        return Task(id=f"history-{i:05d}", domain="terminal", kind="history",
                    setup={**self.setup, "commands": lines},
                    instruction=f"Run these commands from {self.source}, in order: "
                                + " ; ".join(lines))

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The task's next command line, ``None`` after the last."""
        lines = (task.setup.get("commands") if task else None) or []
        i = steps_taken(history)
        return Action(text=lines[i]) if i < len(lines) else None
