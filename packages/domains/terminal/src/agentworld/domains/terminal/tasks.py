"""Seeded generator of file-system tasks for the terminal domain.

Each task has a random tree of 2-4 directories (some nested) and 4-8 short
text files (:mod:`agentworld.domains.terminal.vocab`) as ``Task.setup``, an
instruction, and ``Task.check`` data (see :mod:`agentworld.domains.terminal.fs`)
whose ``goal`` entry names the intended operation for scripted policies.

Kinds: ``create``, ``move``, ``copy``, ``delete``, ``inspect``, ``search``,
``count``, ``edit``, ``navigate`` (:data:`FS_KINDS`), and the session kinds of
:mod:`agentworld.domains.terminal.session_tasks` (state made during the episode,
then read back): ``arith``, ``loop``, ``pipeline``, ``write_lines``, ``script``,
``condition``, ``status``, ``compare``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from posixpath import basename, dirname, join, splitext
from typing import Any

from agentworld.core.types import Task
from agentworld.domains.terminal import vocab
from agentworld.domains.terminal.prompt import HOME
from agentworld.domains.terminal.session_tasks import SESSION_KINDS, SESSION_MAKERS

FS_KINDS = ("create", "move", "copy", "delete", "inspect", "search", "count", "edit", "navigate")
KINDS = FS_KINDS + SESSION_KINDS
Tree = dict[str, Any]
Made = tuple[str, dict[str, Any]]


def _new_name(rng: random.Random, tree: Tree, parent: str, ext: str | None) -> str:
    used = set(tree["files"]) | set(tree["dirs"])
    for _ in range(200):
        stem = rng.choice(vocab.STEMS + vocab.DIRS)
        name = f"{stem}.{ext}" if ext else stem
        if rng.random() < 0.3:
            name = f"{stem}_{rng.randint(2, 99)}" + (f".{ext}" if ext else "")
        if join(parent, name) not in used:
            return join(parent, name)
    raise RuntimeError("could not find a fresh name")


def _create(rng: random.Random, t: Tree) -> Made:
    parent = rng.choice(["", *t["dirs"]])
    where = f" inside {parent}" if parent else " in your home directory"
    variant = rng.randrange(3)
    if variant == 0:
        path = _new_name(rng, t, parent, None)
        return (
            f"Create a directory named {basename(path)}{where}.",
            {"dirs": [path], "goal": {"op": "mkdir", "path": path}},
        )
    text = vocab.random_text(rng)
    if variant == 1:
        path = _new_name(rng, t, parent, "txt")
        return (
            f"Create a file {path} containing the line: {text}",
            {
                "files": {path: {"contains": [text]}},
                "goal": {"op": "write", "path": path, "text": text},
            },
        )
    new_dir = _new_name(rng, t, parent, None)
    path = join(new_dir, rng.choice(["notes.txt", "readme.md", "list.txt", "info.txt"]))
    return (
        f"Make a new directory {new_dir} and in it a file {basename(path)} with the text: {text}",
        {
            "dirs": [new_dir],
            "files": {path: {"contains": [text]}},
            "goal": {"op": "mkdir_write", "dir": new_dir, "path": path, "text": text},
        },
    )


def _move_or_copy(op: str) -> Callable[[random.Random, Tree], Made]:
    def make(rng: random.Random, t: Tree) -> Made:
        src = rng.choice(sorted(t["files"]))
        content = t["files"][src]
        others = [
            d
            for d in ["", *t["dirs"]]
            if d != dirname(src) and join(d, basename(src)) not in t["files"]
        ]
        if others and rng.random() < 0.5:
            dst = join(rng.choice(others), basename(src))
            where = dirname(dst) or "the home directory"
            text = f"{op.capitalize()} {src} into {where}."
        else:
            stem, ext = splitext(basename(src))
            suffix = rng.choice(["_old", "_copy", "2", "_backup", "_v2"]) if op == "copy" else ""
            dst = join(dirname(src), f"{stem}{suffix}{ext}") if suffix else ""
            if not dst or dst in t["files"] or dst in t["dirs"]:
                dst = _new_name(rng, t, dirname(src), ext[1:])
            text = (
                f"Rename {src} to {basename(dst)} (same directory)."
                if op == "move"
                else f"Make a copy of {src} named {dst}."
            )
        check: dict[str, Any] = {
            "files": {dst: {"equals": content}},
            "goal": {"op": op, "src": src, "dst": dst},
        }
        if op == "move":
            check["absent"] = [src]
        else:
            check["files"][src] = {"equals": content}
        return text, check

    return make


def _delete(rng: random.Random, t: Tree) -> Made:
    if t["dirs"] and rng.random() < 0.3:
        path = rng.choice(t["dirs"])
        return (
            f"Delete the directory {path} and everything in it.",
            {"absent": [path], "goal": {"op": "delete", "path": path, "dir": True}},
        )
    path = rng.choice(sorted(t["files"]))
    return f"Delete the file {path}.", {
        "absent": [path],
        "goal": {"op": "delete", "path": path, "dir": False},
    }


def _inspect(rng: random.Random, t: Tree) -> Made:
    path = rng.choice(sorted(t["files"]))
    lines = t["files"][path].splitlines()
    variant, n = rng.randrange(3), rng.randint(1, 2)
    if variant == 0:
        shown, text, op = lines, f"Show the contents of {path}.", "cat"
    elif variant == 1:
        shown, op = lines[:n], "head"
        text = f"Print the first {n} line{'s' * (n > 1)} of {path}."
    else:
        shown, op = lines[-n:], "tail"
        text = f"Print the last {'line' if n == 1 else f'{n} lines'} of {path}."
    expected = [x for x in shown if x.strip()]
    if not expected:  # blank lines (or an empty file): any output would pass the check
        return _inspect_whole(rng, t)
    return text, {"output_contains": expected, "goal": {"op": op, "path": path, "n": n}}


def _inspect_whole(rng: random.Random, t: Tree) -> Made:
    """Show a whole file with visible text: the inspect task for when the lines first drawn
    are blank (a tree of :func:`vocab.random_tree` always has such a file)."""
    path = rng.choice(sorted(p for p, text in t["files"].items() if text.strip()))
    lines = [x for x in t["files"][path].splitlines() if x.strip()]
    return f"Show the contents of {path}.", {
        "output_contains": lines, "goal": {"op": "cat", "path": path, "n": 1},
    }


def _search(rng: random.Random, t: Tree) -> Made:
    files = t["files"]
    for path in rng.sample(sorted(files), len(files)):
        words = sorted(set(re.findall(r"[A-Za-z]{4,}", files[path])))
        unique = [w for w in words if not any(w in c for p, c in files.items() if p != path)]
        if unique and rng.random() < 0.6:
            word = rng.choice(unique)
            return (
                f"Find the file that contains the word {word}.",
                {"output_contains": [path], "goal": {"op": "grep", "word": word, "path": path}},
            )
    ext = rng.choice(sorted({splitext(p)[1] for p in files}))
    hits = sorted(p for p in files if p.endswith(ext))
    return (
        f"List all {ext} files anywhere under the home directory.",
        {"output_contains": hits, "goal": {"op": "find", "pattern": f"*{ext}", "paths": hits}},
    )


def _count(rng: random.Random, t: Tree) -> Made:
    dirs = [d for d in t["dirs"] if any(dirname(p) == d for p in [*t["files"], *t["dirs"]])]
    if dirs and rng.random() < 0.4:
        d = rng.choice(dirs)
        n = sum(dirname(p) == d for p in [*t["files"], *t["dirs"]])
        return (
            f"How many entries does the directory {d} contain?",
            {"output_regex": rf"(?m)^\s*{n}\b", "goal": {"op": "ls_count", "path": d, "n": n}},
        )
    path = rng.choice(sorted(t["files"]))
    n = t["files"][path].count("\n")
    return (
        f"Count the lines in {path}.",
        {"output_regex": rf"(?m)^\s*{n}\b", "goal": {"op": "wc", "path": path, "n": n}},
    )


def _edit(rng: random.Random, t: Tree) -> Made:
    path = rng.choice(sorted(t["files"]))
    content = t["files"][path]
    words = sorted(set(re.findall(r"[A-Za-z]{4,}", content)))
    if words and rng.random() < 0.5:
        old = rng.choice(words)
        new = rng.choice([w for w in vocab.WORDS if w not in content and old not in w])
        return (
            f"In {path}, replace every {old} with {new}.",
            {
                "files": {path: {"contains": [new], "lacks": [old]}},
                "goal": {"op": "replace", "path": path, "old": old, "new": new},
            },
        )
    text = vocab.random_text(rng)
    return (
        f"Append the line '{text}' to the end of {path}.",
        {
            "files": {path: {"equals": content + text + "\n"}},
            "goal": {"op": "append", "path": path, "text": text},
        },
    )


def _navigate(rng: random.Random, t: Tree) -> Made:
    d = rng.choice(t["dirs"])
    target = f"{HOME}/{d}"
    return (
        f"Change into the directory {d} and print the working directory.",
        {"cwd": target, "output_contains": [target], "goal": {"op": "cd", "path": d}},
    )


_MAKERS: dict[str, Callable[[random.Random, Tree], Made]] = {
    "create": _create,
    "move": _move_or_copy("move"),
    "copy": _move_or_copy("copy"),
    "delete": _delete,
    "inspect": _inspect,
    "search": _search,
    "count": _count,
    "edit": _edit,
    "navigate": _navigate,
    **SESSION_MAKERS,
}


class TerminalTaskSampler:
    """Deterministic task generator: ``sample(n, seed=s)`` is a pure function of ``(n, s)``.

    Args:
        kinds: Task kinds to draw from (default: all of :data:`KINDS`).
    """

    def __init__(self, kinds: tuple[str, ...] = KINDS) -> None:
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown task kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
        self.kinds = tuple(kinds)

    def sample(self, n: int, *, seed: int) -> list[Task]:
        """``n`` tasks; kinds cycle in a seeded order (all appear when ``n >= len(kinds)``)."""
        rng = random.Random(f"terminal-tasks-{seed}")
        order = list(self.kinds)
        rng.shuffle(order)
        tasks = []
        for i in range(n):
            kind = order[i % len(order)]
            tree = vocab.random_tree(rng)
            instruction, check = _MAKERS[kind](rng, tree)
            tasks.append(
                Task(
                    id=f"terminal-{seed}-{i:04d}-{kind}",
                    domain="terminal",
                    instruction=instruction,
                    kind=kind,
                    setup=tree,
                    check=check,
                )
            )
        return tasks


TaskSampler = TerminalTaskSampler
