"""Rationales for SFT with next-state reasoning: which part of the state a command reads.

A terminal's next observation is mostly a piece of its state: ``ls DIR`` prints a directory's
names, ``cat FILE`` (and ``head``, ``tail``, ``grep``, ``wc``) a file's lines. The simulator is
given the initial state as a list of such pieces, each under a header line written the way a
command names it (:mod:`agentworld.domains.terminal.state_text`)::

    ls ~/docs
    todo.txt
    cat ~/docs/todo.txt
    buy milk

A rationale resolves the command's path against the working directory and restates the header
of the piece it reads: ``cat todo.txt`` run in ``~/docs`` gives ``cat ~/docs/todo.txt``. That is
the one step of reasoning a world model must get right before it can copy: it turns relative
paths, ``.`` and ``..`` into the key under which the content stands, so the observation can be
copied from behind it. Any listing (``ls -l``, ``ls -a``, ``find``, ``grep -r``) reads
``ls DIR``; any file reader (``nl``, ``cut``, ``sort``, ``file``, ...) ``cat FILE``. Options are
parsed per command: ``head -n 3 FILE`` and ``cat -n FILE`` both read FILE. Commands that read no
piece restate where they run: ``cd DIR`` gives the new directory (``cd ~/docs``), anything else
``cwd ~/docs``.

When earlier steps of the episode wrote what the command reads (a file it names, a directory it
lists, a variable it expands), the description no longer shows that state: the rationale then
adds those earlier command lines, one per line after ``$ `` (the latest
:data:`~agentworld.domains.terminal.episode_writes.MAX_SOURCES`), so that the model reads the
episode instead of the stale description (:mod:`agentworld.domains.terminal.episode_writes`)::

    cat ~/greet.txt
    $ echo hello > greet.txt

The rationale depends only on the action, the working directory before it and the earlier
command lines with the observations before them, never on the step's own observation, so a
simulator can always write it before the observation.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Sequence
from typing import Any

from agentworld.core.types import Step
from agentworld.domains.terminal.episode_writes import expanded_variables, sources
from agentworld.domains.terminal.prompt import HOME, absolute_cwd, display_cwd, split_prompt

_FILE_READERS = frozenset(
    {"cat", "head", "tail", "wc", "nl", "sort", "uniq", "tac", "cut", "rev", "file"}
)
_GREPS = frozenset({"grep", "egrep", "fgrep"})
_PATTERN_FIRST = _GREPS | {"sed"}
# Options that take the next word as their value, per command (GNU coreutils, grep, sed and
# findutils manuals); any other option is a flag. ``cat -n FILE`` numbers FILE's lines, while
# ``head -n 3 FILE`` reads FILE: one table for all commands misreads one or the other.
_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "head": frozenset({"-n", "-c"}),
    "tail": frozenset({"-n", "-c"}),
    "grep": frozenset({"-e", "-f", "-m", "-A", "-B", "-C"}),
    "sed": frozenset({"-e", "-f", "-l"}),
    "cut": frozenset({"-b", "-c", "-d", "-f"}),
    "sort": frozenset({"-k", "-t", "-o", "-S"}),
    "uniq": frozenset({"-f", "-s", "-w"}),
    "nl": frozenset({"-b", "-n", "-w", "-s", "-v", "-i"}),
    "find": frozenset(
        {"-name", "-iname", "-type", "-maxdepth", "-mindepth", "-path", "-size", "-newer", "-perm"}
    ),
}
_VALUE_OPTIONS.update(dict.fromkeys(_GREPS, _VALUE_OPTIONS["grep"]))
# The pattern (grep) or script (sed) comes from an option instead of the first operand.
_PATTERN_OPTIONS = frozenset({"-e", "-f"})
_SEPARATORS = frozenset({"|", "||", "&&", ";", "&", ">", ">>", "<"})


def _first_command(action: str) -> list[str]:
    """Words of the first simple command of ``action`` (``[]`` if it cannot be split)."""
    lexer = shlex.shlex(action, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    try:
        for word in lexer:
            if word in _SEPARATORS:
                break
            words.append(word)
    except ValueError:  # unbalanced quotes
        return []
    return words


def _operands(name: str, words: list[str]) -> list[str]:
    """Non-option arguments of command ``name``, skipping the values of its options that take
    one (``head -n 3``, but not ``cat -n``)."""
    values = _VALUE_OPTIONS.get(name, frozenset())
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in values:
            skip = True
        elif not (word.startswith("-") and word != "-"):
            out.append(word)
    return out


def _recursive_grep(words: list[str]) -> bool:
    """True for ``grep -r``/``-R`` (also in a cluster such as ``-rn``): it reads a directory."""
    return any(
        w.startswith("-") and not w.startswith("--") and ("r" in w or "R" in w) for w in words
    )


def resolve(cwd: str, path: str) -> str:
    """``path`` as the prompt would show it, resolved against absolute ``cwd``.

    ``~`` is the home directory; ``.`` and ``..`` are folded (``resolve("/home/agent/a", "../b")``
    is ``~/b``).
    """
    return display_cwd(posixpath.normpath(posixpath.join(cwd, absolute_cwd(path))))


History = Sequence[tuple[str, str]]
"""``(command line, observation before it)`` of each earlier step of the episode, oldest first."""


def explain(
    step: Step, previous_state: dict[str, Any] | None, history: History = ()
) -> str:
    """The state lookup of ``step``: ``ls DIR``, ``cat FILE``, ``cd DIR`` or ``cwd DIR``, then
    the earlier command lines that wrote what it reads.

    Args:
        step: The transition; only ``step.action.text`` is read.
        previous_state: ``Observation.state`` before the step; its ``cwd`` (absolute) resolves
            relative paths (the home directory when absent).
        history: The episode's earlier steps (see :data:`History`); empty: the header alone.

    Returns:
        The header, in the initial-state description's syntax, of the piece of state the
        command reads, then one ``$ COMMAND`` line per earlier writer (see the module docstring).
    """
    return lookup(step.action.text, (previous_state or {}).get("cwd") or HOME, history)


def explain_text(action: str, observation: str, history: History = ()) -> str:
    """The rationale :func:`explain` gives, written from text alone (what a simulator has).

    Args:
        action: The command line.
        observation: The observation before it (the initial one, or the previous step's);
            its prompt line gives the working directory (the home directory without one).
        history: The episode's earlier steps (see :data:`History`).

    Returns:
        The same text as :func:`explain` for a step whose previous state has that ``cwd``.
    """
    _, prompt = split_prompt(observation)
    return lookup(action, absolute_cwd(prompt.cwd) if prompt else HOME, history)


def lookup(action: str, cwd: str, history: History = ()) -> str:
    """The state lookup of ``action`` run in absolute directory ``cwd`` (see :func:`explain`),
    with the command lines of ``history`` that wrote what it reads."""
    header = _header(action, cwd)
    if not history:
        return header
    lexer = shlex.shlex(action, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = [w for w in lexer if w not in _SEPARATORS and not w.startswith("-")]
    except ValueError:  # unbalanced quotes
        words = action.split()
    reads = {absolute_cwd(resolve(cwd, w)) for w in words if w and "$" not in w}
    kind, _, target = header.partition(" ")
    lists = {absolute_cwd(target)} if kind == "ls" else set()
    earlier = sources(reads, lists, expanded_variables(action, history), history)
    return "\n".join([header, *(f"$ {line}" for line in earlier)])


def _header(action: str, cwd: str) -> str:
    words = _first_command(action)
    name, args = (words[0], _operands(words[0], words[1:])) if words else ("", [])
    if name in _PATTERN_FIRST and not _PATTERN_OPTIONS.intersection(words[1:]):
        args = args[1:]
    if name in _GREPS and _recursive_grep(words[1:]):
        return f"ls {resolve(cwd, args[0] if args else '.')}"
    if name in ("ls", "find"):
        return f"ls {resolve(cwd, args[0] if args else '.')}"
    if (name in _FILE_READERS or name in _PATTERN_FIRST) and args:
        return f"cat {resolve(cwd, args[0])}"
    if name == "cd" and args != ["-"]:
        return f"cd {resolve(cwd, args[0] if args else '~')}"
    return f"cwd {display_cwd(cwd)}"
