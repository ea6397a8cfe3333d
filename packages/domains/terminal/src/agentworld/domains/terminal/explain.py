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
copied from behind it. Any listing (``ls -l``, ``ls -a``, ``find``) reads ``ls DIR``. Commands
that read no piece restate where they run: ``cd DIR`` gives the new directory (``cd ~/docs``),
anything else ``cwd ~/docs``.

The rationale depends only on the action and the working directory before it, never on the
observation, so a simulator can always write it before the observation.
"""

from __future__ import annotations

import posixpath
import shlex
from typing import Any

from agentworld.core.types import Step
from agentworld.domains.terminal.prompt import HOME, absolute_cwd, display_cwd, split_prompt

_FILE_READERS = frozenset({"cat", "head", "tail", "wc", "nl", "sort", "uniq", "tac"})
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "sed"})
_VALUE_FLAGS = frozenset({"-n", "-c", "-e", "-f", "-m", "-name", "-type", "-maxdepth"})
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


def _operands(words: list[str]) -> list[str]:
    """Non-option arguments, skipping the values of options that take one (``-n 3``)."""
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in _VALUE_FLAGS:
            skip = True
        elif not (word.startswith("-") and word != "-"):
            out.append(word)
    return out


def resolve(cwd: str, path: str) -> str:
    """``path`` as the prompt would show it, resolved against absolute ``cwd``.

    ``~`` is the home directory; ``.`` and ``..`` are folded (``resolve("/home/agent/a", "../b")``
    is ``~/b``).
    """
    return display_cwd(posixpath.normpath(posixpath.join(cwd, absolute_cwd(path))))


def explain(step: Step, previous_state: dict[str, Any] | None) -> str:
    """The state lookup of ``step``: ``ls DIR``, ``cat FILE``, ``cd DIR`` or ``cwd DIR``.

    Args:
        step: The transition; only ``step.action.text`` is read.
        previous_state: ``Observation.state`` before the step; its ``cwd`` (absolute) resolves
            relative paths (the home directory when absent).

    Returns:
        One line: the header, in the initial-state description's syntax, of the piece of state
        the command reads (see the module docstring).
    """
    return lookup(step.action.text, (previous_state or {}).get("cwd") or HOME)


def explain_text(action: str, observation: str) -> str:
    """The rationale :func:`explain` gives, written from text alone (what a simulator has).

    Args:
        action: The command line.
        observation: The observation before it (the initial one, or the previous step's);
            its prompt line gives the working directory (the home directory without one).

    Returns:
        The same line as :func:`explain` for a step whose previous state has that ``cwd``.
    """
    _, prompt = split_prompt(observation)
    return lookup(action, absolute_cwd(prompt.cwd) if prompt else HOME)


def lookup(action: str, cwd: str) -> str:
    """The state lookup of ``action`` run in absolute directory ``cwd`` (see :func:`explain`)."""
    words = _first_command(action)
    name, args = (words[0], _operands(words[1:])) if words else ("", [])
    if name in _PATTERN_FIRST:
        args = args[1:]
    if name in ("ls", "find"):
        return f"ls {resolve(cwd, args[0] if args else '.')}"
    if (name in _FILE_READERS or name in _PATTERN_FIRST) and args:
        return f"cat {resolve(cwd, args[0])}"
    if name == "cd" and args != ["-"]:
        return f"cd {resolve(cwd, args[0] if args else '~')}"
    return f"cwd {display_cwd(cwd)}"
