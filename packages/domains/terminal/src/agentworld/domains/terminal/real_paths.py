"""Adapting a command line from a manual to an episode's file tree.

Manuals' examples name files that are not in the sandbox (``sort -k2 file``, ``grep -n main
/usr/src/*.c``, ``find /usr/local/doc -name '*.texi'``). :func:`adapt` rewrites the path-like
operands of a command line to the episode's real files and directories, and leaves everything
else as the manual wrote it: the command is split into words outside quotes (so ``'s/a b/c/'``
is one word), and only *plain* words are rewritten: no quotes, ``$``, globs or ``=``, not an
option, not the first word of a pipeline stage. A plain word is path-like when it is an absolute
path, has a file extension (``notes.txt``, ``a.tar.gz``) or is a placeholder name manuals use
(``file``, ``foo``, ``input``, ...). The same word maps to the same path throughout an episode
(the ``mapping`` dict), distinct words to distinct paths while there are enough; the target of
an output redirection (``> out.txt``), of ``-o`` and of ``tar -cf`` becomes a fresh name in the
current directory (its last component), so no real file is overwritten by an archive.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

PLACEHOLDERS = frozenset({
    "file", "file1", "file2", "file3", "foo", "bar", "baz", "input", "output", "infile",
    "outfile", "somefile", "myfile", "oldfile", "newfile", "data", "F", "G", "FILE",
})
DIR_WORDS = frozenset({"dir", "dir1", "dir2", "directory", "DIR", "src", "dest", "dst", "."})
_DIR_NAMES = frozenset({"usr", "bin", "lib", "share", "doc", "src", "local", "tmp", "var", "log",
                        "home", "etc", "opt", "include", "man", "info", "docs", "build"})
_KEEP = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero", "/"})
_EXTENSION = re.compile(r"^[\w.+-]*\w\.[A-Za-z][A-Za-z0-9]{0,4}$")
_PLAIN = re.compile(r"^[\w./+@%,:~-]+$")
_OPERATORS = ("|", "||", "&&", ";", "&", "(", ")")
_REDIRECTS = (">", ">>", "2>", "2>>", "&>")


def spans(line: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each word of ``line``: split on unquoted whitespace and around
    unquoted ``|``, ``||``, ``&&``, ``;``, ``&``, ``(``, ``)``, ``<``, ``>``, ``>>``, ``2>``;
    quotes and backslashes stay inside the words."""
    out, begin, quote, i = [], None, "", 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"':
                i += 1
        elif c in "'\"":
            quote, begin = c, i if begin is None else begin
        elif c == "\\":
            begin = i if begin is None else begin
            i += 1
        elif c.isspace():
            if begin is not None:
                out.append((begin, i))
            begin = None
        elif c in "|;&<>()":
            if begin is not None and line[begin:i] == "2" and c == ">":
                op_start = begin
            else:
                if begin is not None:
                    out.append((begin, i))
                op_start = i
            two = line[i:i + 2]
            width = 2 if two in ("||", "&&", ">>") else 1
            out.append((op_start, i + width))
            begin = None
            i += width - 1
        else:
            begin = i if begin is None else begin
        i += 1
    if begin is not None:
        out.append((begin, len(line)))
    return out


def words(line: str) -> list[str]:
    """The words of ``line`` (:func:`spans`)."""
    return [line[a:b] for a, b in spans(line)]


def _pathlike(word: str) -> bool:
    if word in _KEEP or not _PLAIN.match(word) or word.startswith(("-", "+")):
        return False
    if word.startswith(("/", "~/")):
        return True
    return word in PLACEHOLDERS or word in DIR_WORDS - {"."} or bool(_EXTENSION.match(word))


def adapt(line: str, files: Sequence[str], dirs: Sequence[str], rng: random.Random,
          mapping: dict[str, str]) -> str:
    """``line`` with its path-like operands replaced by paths of the episode's tree.

    Args:
        line: One command line from a manual.
        files: The episode's files, relative to the home directory (the working directory).
        dirs: Its directories, relative to the home directory.
        rng: Draws the paths.
        mapping: Word -> path chosen so far in this episode; updated in place.

    Returns:
        The command line with those words replaced, everything else as it was.
    """
    out, first, after_redirect, command, previous = [], True, False, "", ""
    for a, b in spans(line):
        word = new = line[a:b]
        if word in _OPERATORS:
            first, after_redirect = True, False
        elif word in _REDIRECTS or word == "<":
            after_redirect = word != "<"
        elif first:
            first, command = False, word
        elif after_redirect or previous in ("-o", "--output") or (
                command == "tar" and previous.startswith("-") and "f" in previous
                and "c" in previous):
            after_redirect = False
            if _pathlike(word):  # written, not read: a fresh name in the working directory
                new = mapping.setdefault(word, word.rstrip("/").rsplit("/", 1)[-1] or "out")
        elif _pathlike(word):
            new = mapping.get(word) or _draw(word, files, dirs, rng, mapping)
        out.append((a, b, new))
        previous = word
    for a, b, new in reversed(out):
        line = line[:a] + new + line[b:]
    return line


def _draw(word: str, files: Sequence[str], dirs: Sequence[str], rng: random.Random,
          mapping: dict[str, str]) -> str:
    is_dir = word.endswith("/") or word in DIR_WORDS or (
        word.startswith(("/", "~/")) and word.rsplit("/", 1)[-1] in _DIR_NAMES)
    pool = list(dirs) if is_dir and dirs else list(files) or ["."]
    fresh = [p for p in pool if p not in mapping.values()] or pool
    mapping[word] = rng.choice(sorted(fresh))
    return mapping[word]
