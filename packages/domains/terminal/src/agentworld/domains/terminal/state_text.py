"""The initial state of a terminal task as text: what the world model is told at the start.

Each piece of the home directory stands under a header line written the way a command names it
(paths from ``~``), and is exactly what that command prints on this terminal:

- ``ls DIR``: the names in byte order, two spaces apart (an empty directory has no line);
- ``cat FILE``: the file's lines.

SFT rationales restate the header a command reads (:mod:`agentworld.domains.terminal.explain`),
so the observation can be copied from behind it. Example::

    Initial state (every entry dated 2024-01-01):
    ls ~
    docs
    ls ~/docs
    todo.txt
    cat ~/docs/todo.txt
    buy milk

A set-up with a ``state_chars`` key (a user's home, ``--set home=DIR``:
:mod:`agentworld.domains.terminal.user_home`) bounds the description to that many characters:
every ``ls DIR`` piece stays (names are short, and a file the model is not shown is still listed),
and files' text is shown whole, smallest first, while the description fits; a file left out keeps
its ``cat FILE`` header, under which one line gives its size, so the model knows the content
exists but is not given (the rationale's restated header still names a line of the
description)::

    cat ~/setup.py
    [4512 bytes not shown]

Smallest first maximises the number of files the model sees whole for the budget (one large
file would otherwise take the place of many small ones), so most ``cat``, ``head`` and ``wc``
transitions on the home stay answerable from the prompt; the largest files are the ones a
terminal session shows least of anyway. Without the key (every built-in task) nothing is left
out and the text is as before.

Long listings (``ls -l DIR`` pieces, sizes and all) were tried and left out: their lines repeat
the same tokens (``-rw-r--r-- 1 user user``, the date), so a copy loses its line, and they doubled
the SFT sequences without raising ``ls -l`` fidelity (``agentworld quickstart``'s fidelity
report, by action type).
"""

from __future__ import annotations

from typing import Any


#: Set-up key: characters the description may hold (see the module docstring).
STATE_CHARS_KEY = "state_chars"
#: Default ``state_chars`` of a task with a user's home (``--set home_state_chars=N``): about
#: 1,000 tokens of a BPE tokenizer, half of a 2,048-token context, leaving the rest to turns.
HOME_STATE_CHARS = 3072


def render_setup(setup: dict[str, Any]) -> str:
    """The initial home directory of ``setup`` (``{"dirs": [...], "files": {path: text}}``,
    optionally ``"state_chars": N``) as text.

    See the module docstring for the format. With ``state_chars`` the text is at most ``N``
    characters unless the directory listings and file headers alone are longer (they are never
    left out; a home is at most 500 entries, :mod:`~agentworld.domains.terminal.user_home`).

    Raises:
        ValueError: ``state_chars`` is not a non-negative integer (the message names it).
    """
    budget = setup.get(STATE_CHARS_KEY)
    if budget is not None and (type(budget) is not int or budget < 0):
        raise ValueError(f"task.setup[{STATE_CHARS_KEY!r}]: expected a number of characters "
                         f"(an integer >= 0), got {budget!r:.40}")
    files = setup.get("files", {})
    dirs = {"", *setup.get("dirs", [])}
    for path in files:
        parts = path.split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    for d in list(dirs):
        parts = d.split("/") if d else []
        dirs.update("/".join(parts[:i]) for i in range(len(parts)))
    children: dict[str, set[str]] = {d: set() for d in dirs}
    for path in [*dirs, *files]:
        if path:
            parent, _, name = path.rpartition("/")
            children[parent].add(name)
    lines = ["Initial state (every entry dated 2024-01-01):"]
    for d in sorted(dirs):
        lines.append("ls ~/" + d if d else "ls ~")
        if children[d]:
            lines.append("  ".join(sorted(children[d])))
    shown = set(files) if budget is None else _shown(files, budget, len("\n".join(lines)))
    for path, content in sorted(files.items()):
        lines.append(f"cat ~/{path}")
        if path not in shown:
            lines.append(_not_shown(content))
        elif content.rstrip("\n"):
            lines.append(content.rstrip("\n"))
    return "\n".join(lines)


def _not_shown(content: str) -> str:
    """The line under the header of a file whose text is left out: its size in UTF-8 bytes."""
    return f"[{len(content.encode('utf-8', 'surrogatepass'))} bytes not shown]"


def _shown(files: dict[str, str], budget: int, listed: int) -> set[str]:
    """Paths of ``files`` whose text fits in ``budget`` characters, smallest first, after the
    ``listed`` characters of the listings and every file's header and not-shown line."""
    used = listed + sum(len(f"\ncat ~/{p}\n{_not_shown(c)}") for p, c in files.items())
    shown = set()
    for path in sorted(files, key=lambda p: (len(files[p]), p)):
        text = files[path].rstrip("\n")
        extra = (len(text) + 1 if text else 0) - len(_not_shown(files[path])) - 1
        if extra <= 0 or used + extra <= budget:  # an empty file is always shown
            used += extra
            shown.add(path)
    return shown
