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

Long listings (``ls -l DIR`` pieces, sizes and all) were tried and left out: their lines repeat
the same tokens (``-rw-r--r-- 1 user user``, the date), so a copy loses its line, and they doubled
the SFT sequences without raising ``ls -l`` fidelity (``agentworld quickstart``'s fidelity
report, by action type).
"""

from __future__ import annotations

from typing import Any


def render_setup(setup: dict[str, Any]) -> str:
    """The initial home directory of ``setup`` (``{"dirs": [...], "files": {path: text}}``) as text.

    See the module docstring for the format.
    """
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
    for path, content in sorted(files.items()):
        lines.append(f"cat ~/{path}")
        if content.rstrip("\n"):
            lines.append(content.rstrip("\n"))
    return "\n".join(lines)
