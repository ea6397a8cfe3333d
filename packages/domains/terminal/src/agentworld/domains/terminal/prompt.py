"""The visible shell prompt of the terminal domain: render and parse it.

Format (chosen for this domain, shown after every command)::

    user@sandbox:~/docs$             last command succeeded (exit status 0)
    [1] user@sandbox:~$              last command failed with exit status 1

The working directory is shown as bash's ``\\w`` does: the home directory
``/home/agent`` is abbreviated to ``~``. An observation is the command's
output followed by this prompt line (the prompt ends with ``"$ "`` and no
newline), exactly as a terminal would show it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

USER = "user"
HOST = "sandbox"
HOME = "/home/agent"

# The prompt is the last thing on the last line; the output may run into it
# when it did not end with a newline (e.g. ``printf abc``).
_PROMPT_RE = re.compile(r"(?:\[(\d{1,3})\] )?" + re.escape(f"{USER}@{HOST}:") + r"([^\n]*?)\$ ?$")


@dataclass(frozen=True, slots=True)
class Prompt:
    """A parsed prompt line.

    Attributes:
        exit_code: Exit status of the previous command (0 when no ``[n]`` marker).
        cwd: Working directory as displayed (``~``-abbreviated).
    """

    exit_code: int
    cwd: str


def display_cwd(cwd: str, home: str = HOME) -> str:
    """``cwd`` as the prompt shows it (``/home/agent/a`` -> ``~/a``)."""
    if cwd == home:
        return "~"
    if cwd.startswith(home + "/"):
        return "~" + cwd[len(home) :]
    return cwd


def absolute_cwd(shown: str, home: str = HOME) -> str:
    """Inverse of :func:`display_cwd` (``~/a`` -> ``/home/agent/a``)."""
    if shown == "~":
        return home
    if shown.startswith("~/"):
        return home + shown[1:]
    return shown


def render_prompt(cwd: str, exit_code: int, home: str = HOME) -> str:
    """The prompt line for absolute ``cwd`` after a command that exited with ``exit_code``."""
    status = f"[{exit_code}] " if exit_code else ""
    return f"{status}{USER}@{HOST}:{display_cwd(cwd, home)}$ "


def split_prompt(text: str) -> tuple[str, Prompt | None]:
    """Split an observation into (output, prompt).

    Returns the text before the trailing prompt and the parsed prompt, or
    ``(text, None)`` when ``text`` does not end with a prompt line.
    """
    match = _PROMPT_RE.search(text)
    if match is None:
        return text, None
    code = int(match.group(1)) if match.group(1) else 0
    return text[: match.start()], Prompt(exit_code=code, cwd=match.group(2))
