"""Which earlier command lines of an episode wrote the state a command reads.

The initial-state description in the system prompt shows the files as they were before the
episode. A command that reads a file the episode itself wrote (``echo hi > a.txt``, then
``cat a.txt``), lists a directory the episode changed, or expands a variable the episode set
depends on those earlier command lines, not on the description. :func:`sources` finds them
from text alone (the earlier command lines and the working directory each ran in, which the
prompt of the observation before it shows), so a world model's rationale can restate them
right before it writes the observation, both in training and in a simulator.

What counts as a write (bash and coreutils semantics, read from the command text):
redirections (``>``, ``>>``, ``&>``, ``>|``, here-docs included), ``tee``, ``touch``,
``mkdir``, ``rm``, ``rmdir``, ``cp``, ``mv``, ``ln``, ``sed -i``, and, for variables, any
assignment ``NAME=`` and ``for``/``read``/``export``/``let``/``local`` of a name. The parse is
lexical (no expansion), so a path built by ``$(...)`` is not followed.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence

from agentworld.domains.terminal.consistency import _ASSIGNED, _QUOTED, _uses_variable
from agentworld.domains.terminal.prompt import HOME, absolute_cwd

_REDIRECT = re.compile(r"(?:&>>?|\d?>>?\|?)\s*([^\s;&|<>()]+)")
_WRITERS = {"tee", "touch", "mkdir", "rm", "rmdir"}  # every operand is written
_MOVERS = {"cp", "mv", "ln", "install"}  # the last operand (mv: every operand)
_SPLIT = re.compile(r"\|\||&&|[|;&\n]")
MAX_SOURCES = 3  # earlier command lines restated at most (the latest ones)


def _resolve(cwd: str, path: str) -> str:
    if path == "~" or path.startswith("~/"):
        path = HOME + path[1:]
    return posixpath.normpath(posixpath.join(cwd, path))


def written_paths(action: str, cwd: str) -> set[str]:
    """Absolute paths ``action`` (run in absolute directory ``cwd``) creates, changes, moves
    or removes, as far as its text tells (see the module docstring); ``/dev/*`` is left out."""
    paths: set[str] = set()
    for target in _REDIRECT.findall(_QUOTED.sub(" ", action)):
        if not target.startswith("&"):
            paths.add(target)
    for part in _SPLIT.split(action):
        try:
            words = shlex.split(part)
        except ValueError:  # unbalanced quotes
            continue
        while words and "=" in words[0] and not words[0].startswith("-"):
            words.pop(0)  # leading assignments: `X=1 cmd`
        if not words:
            continue
        name, operands = posixpath.basename(words[0]), [w for w in words[1:] if not w.startswith("-")]
        operands = [w for w in operands if not re.match(r"\d?[<>]", w)]
        if name in _WRITERS:
            paths.update(operands)
        elif name in _MOVERS and len(operands) >= 2:
            paths.update(operands if name == "mv" else operands[-1:])
        elif name == "sed" and any(w.startswith("-i") for w in words[1:]) and len(operands) >= 2:
            paths.update(operands[1:])
    return {
        _resolve(cwd, p) for p in paths if p and not p.startswith("/dev/") and "$" not in p
    }


def _history_cwd(observation: str) -> str:
    from agentworld.domains.terminal.prompt import split_prompt

    _, prompt = split_prompt(observation)
    return absolute_cwd(prompt.cwd) if prompt else HOME


def sources(
    reads: set[str], lists: set[str], variables: set[str], history: Sequence[tuple[str, str]]
) -> list[str]:
    """The earlier command lines (oldest first, at most :data:`MAX_SOURCES`, the latest) that
    wrote what a command reads.

    Args:
        reads: Absolute paths the command reads (a file, or a directory it lists).
        lists: Absolute directories whose entries the command shows (a write inside counts).
        variables: Shell variable names the command expands.
        history: ``(command line, observation before it)`` of each earlier step, oldest first;
            the observation's prompt gives the directory the command ran in.
    """
    found: list[str] = []
    for action, before in history:
        written = written_paths(action, _history_cwd(before))
        hit = bool(written & reads) or any(posixpath.dirname(p) in lists for p in written)
        if not hit and variables:
            assigned = {a or b for a, b in _ASSIGNED.findall(_QUOTED.sub(" ", action))}
            hit = bool(assigned & variables)
        if hit:
            found.append(" ".join(action.split()))
    return found[-MAX_SOURCES:]


def expanded_variables(action: str, history: Sequence[tuple[str, str]]) -> set[str]:
    """Names assigned by earlier command lines that ``action`` expands (``$x``, ``${x}``, or a
    bare name inside ``$((...))``)."""
    assigned: set[str] = set()
    for earlier, _ in history:
        assigned |= {a or b for a, b in _ASSIGNED.findall(_QUOTED.sub(" ", earlier))}
    return {name for name in assigned if _uses_variable(action, {name})}
