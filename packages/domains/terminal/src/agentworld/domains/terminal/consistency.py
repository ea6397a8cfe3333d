"""Which commands a command line runs, and which steps read what earlier steps of the episode wrote.

* :func:`command_words`: the command families of a command line (the first word
  of every simple command, control keywords included), used to hold whole command
  families out of training (:mod:`agentworld.core.holdout`).
* :func:`consistency_turns`: the steps of an episode whose real output depends on
  state that earlier steps of the same episode wrote, the in-episode consistency
  subset of fidelity reports.

A step *reads episode state* when its observation shows output or a non-zero exit
status and its command line

* names a file or directory an earlier step created, changed, moved or removed
  (the file-tree snapshots of ``Observation.state["files"]`` before and after each
  step tell which; its base name appears as a whole word), or
* lists (``ls``, ``find``, ``du``, ``tree``) a directory whose entries an earlier
  step changed, or
* expands a shell variable an earlier step assigned (``$x``, ``${x}``, or a bare
  name inside ``$((...))``).

Steps that change state but print nothing and succeed (``rm made.txt``) are not
in the subset: the empty observation is right for them whatever came before.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from agentworld.domains.terminal.prompt import HOME, split_prompt

_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_ARITHMETIC = re.compile(r"\$\(\(.*?\)\)")
_SEPARATORS = re.compile(r"\|\||&&|[|;&`\n]|\$\(+|\(+|\)+|\{|\}")
_REDIRECTS = re.compile(r"\d*(?:<<<|>>|>&?|<)\s*[^\s;&|()]*")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.+-]*$|^\[\[?$")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_ASSIGNED = re.compile(
    r"(?:^|[\s;&|(])([A-Za-z_][A-Za-z0-9_]*)=|\b(?:for|read|let|local|export)\s+([A-Za-z_][A-Za-z0-9_]*)"
)
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)\\?([A-Za-z_][A-Za-z0-9_]*)\2")
_PREFIX_WORDS = {"do", "then", "else", "elif", "!", "time", "sudo", "command", "exec", "nohup"}
_LISTERS = {"ls", "find", "du", "tree"}
_CONDITIONS = {"if", "while", "until"}  # followed by the command they test


def command_words(text: str) -> set[str]:
    """The command families a command line runs: the first word of every simple command
    (after variable assignments; ``do``/``then``/``else`` skipped; a path reduced to its base
    name), keywords such as ``for``, ``while``, ``if`` and ``case`` included.

    Quoted strings and ``$((...))`` are blanked first, so ``echo 'a | sort'`` runs only
    ``echo``, and here-document bodies are dropped (:func:`without_heredoc_bodies`). Words that
    are not command names (numbers, ``$x``) are dropped; ``[`` and ``[[`` count as ``test``.
    """
    words: set[str] = set()
    text = _ARITHMETIC.sub(" 0 ", _QUOTED.sub(" '' ", without_heredoc_bodies(text)))
    for part in _SEPARATORS.split(_REDIRECTS.sub(" ", text)):
        tokens = part.split()
        while tokens and (_ASSIGN.match(tokens[0]) or tokens[0] in _PREFIX_WORDS
                          or (tokens[0] in _CONDITIONS and len(tokens) > 1)):
            if tokens[0] in _CONDITIONS:
                words.add(tokens[0])
            tokens.pop(0)
        if not tokens:
            continue
        word = posixpath.basename(tokens[0]) or tokens[0]
        if word in ("[", "[["):
            words.add("test")
        elif _NAME.match(word) and word not in ("fi", "done", "esac", "in"):
            words.add(word)
    return words


def heredoc_delimiters(line: str) -> list[tuple[bool, str]]:
    """The here-documents a command line opens, in order: ``(tabs stripped, delimiter)`` for
    each ``<<WORD`` (``<<'WORD'``, ``<<"WORD"``, ``<<\\WORD``; ``<<-WORD`` strips leading
    tabs) outside quotes; ``<<<`` here-strings are not here-documents."""
    quoted = [m.span() for m in _QUOTED.finditer(line)]
    return [
        (match.group(1) == "-", match.group(3))
        for match in _HEREDOC.finditer(line.replace("<<<", "   "))
        if not any(a < match.start() < b for a, b in quoted)
    ]


def without_heredoc_bodies(text: str) -> str:
    """``text`` without the bodies and closing delimiters of its here-documents: the lines
    after a line that opens one (:func:`heredoc_delimiters`) up to the line ``WORD``
    (leading tabs stripped for ``<<-``) or the end, as bash reads them (bash(1), "Here
    Documents"). Data, not commands: ``cat <<EOF`` / ``ls`` / ``EOF`` runs only ``cat``."""
    out: list[str] = []
    pending: list[tuple[bool, str]] = []  # (tabs stripped, delimiter) still to read
    for line in text.split("\n"):
        if pending:
            tabs, word = pending[0]
            if (line.lstrip("\t") if tabs else line) == word:
                pending.pop(0)
            continue
        out.append(line)
        pending += heredoc_delimiters(line)
    return "\n".join(out)


def _output_shown(observation: Any) -> bool:
    state = observation.state or {}
    output, _ = split_prompt(observation.text)
    return bool(output.strip()) or state.get("exit_code") not in (None, 0)


def _uses_variable(text: str, names: set[str]) -> bool:
    text = re.sub(r"'[^']*'", " ", text)  # no expansion inside single quotes
    for name in names:
        if re.search(rf"\$\{{?{name}\b", text):
            return True
        for inner in re.findall(r"\$\(\((.*?)\)\)", text):
            if re.search(rf"(?<![\w$]){name}\b", inner):
                return True
    return False


def _names_path(text: str, paths: set[str]) -> bool:
    bare = _QUOTED.sub(lambda m: m.group(0)[1:-1], text)
    for path in paths:
        name = posixpath.basename(path)
        if name and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", bare):
            return True
    return False


def _lists_changed_dir(text: str, paths: set[str], cwd: str) -> bool:
    tokens = _QUOTED.sub(lambda m: m.group(0)[1:-1], text).split()
    if not tokens or posixpath.basename(tokens[0]) not in _LISTERS:
        return False
    args = [t for t in tokens[1:] if not t.startswith("-")]
    if tokens[0] == "find":
        args = args[:1]
    targets = []
    for arg in args or ["."]:
        if arg in ("|", ">", ";", "&&", "||"):
            break
        absolute = posixpath.normpath(posixpath.join(cwd, arg.replace("~", HOME, 1)))
        targets.append(posixpath.relpath(absolute, HOME) if absolute.startswith(HOME) else None)
    recursive = tokens[0] in ("find", "du", "tree") or any(t.startswith("-R") for t in tokens)
    for target in targets:
        if target is None:
            continue
        target = "" if target == "." else target
        for path in paths:
            parent = posixpath.dirname(path)
            if parent == target or (recursive and (not target or path.startswith(target + "/"))):
                return True
    return False


def consistency_turns(episode: Any) -> set[int]:
    """Indices of ``episode.steps`` whose real output depends on state that earlier steps of
    the same episode wrote (rules in the module docstring).

    Args:
        episode: An :class:`agentworld.core.types.Episode` of the terminal domain; the file
            snapshots come from ``Observation.state["files"]`` (steps without a state
            change nothing).
    """
    initial = episode.initial_observation.state or {}
    files: dict[str, str] = dict(initial.get("files") or {})
    cwd = initial.get("cwd") or HOME
    changed: set[str] = set()
    assigned: set[str] = set()
    turns: set[int] = set()
    for turn, step in enumerate(episode.steps):
        text = step.action.text
        if (changed or assigned) and _output_shown(step.observation) and (
            _uses_variable(text, assigned)
            or _names_path(text, changed)
            or _lists_changed_dir(text, changed, cwd)
        ):
            turns.add(turn)
        state = step.observation.state or {}
        after = state.get("files")
        if isinstance(after, dict):
            changed |= {p for p in set(files) | set(after) if files.get(p) != after.get(p)}
            files = dict(after)
        cwd = state.get("cwd") or cwd
        assigned |= {a or b for a, b in _ASSIGNED.findall(_QUOTED.sub(" ", text))}
    return turns
