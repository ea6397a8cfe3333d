"""Seeded tasks of the interactive terminal, each one solved through an interactive program.

Every task has a home directory of 2-4 short text files (the terminal domain's
:mod:`~agentworld.domains.terminal.vocab`) plus the files its kind needs, an instruction, and
``Task.check`` data of the terminal domain's form (:mod:`agentworld.domains.terminal.fs`),
whose ``goal`` entry is the plan the scripted policy follows. Kinds (:data:`KINDS`):

* ``repl``: compute an expression in the ``python3`` REPL and write the result to a file;
* ``pager``: open a numbered list in ``less``, jump to a line (``Ng``), read its word off the
  screen and write it to a file;
* ``edit``: append a line to a file with ``vi``;
* ``replace``: substitute a word in a file with ``vi``'s ``:%s``;
* ``interrupt``: start a long ``sleep``, stop it with ``C-c``, then make a file;
* ``top``: run ``top``, read the number of tasks off its screen, quit it, write the number;
* ``shell``: plain command lines (``wc -l``, ``head``, ``grep``) whose answer the screen shows.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from agentworld.core.types import Task
from agentworld.domains.terminal import vocab

KINDS = ("repl", "pager", "edit", "replace", "interrupt", "top", "shell")
Made = tuple[str, dict[str, Any]]


def _tree(rng: random.Random) -> dict[str, Any]:
    files: dict[str, str] = {}
    taken: set[str] = set()
    for _ in range(rng.randint(2, 4)):
        name, text = vocab.random_file(rng, taken)
        name = name.rsplit("/", 1)[-1]
        if name not in files:
            files[name] = text
            taken.add(name)
    return {"dirs": [], "files": files}


def _fresh(rng: random.Random, tree: dict[str, Any], ext: str = "txt") -> str:
    for _ in range(100):
        name = f"{rng.choice(vocab.STEMS)}.{ext}"
        if name not in tree["files"]:
            return name
    raise RuntimeError("no fresh file name")


def _repl(rng: random.Random, tree: dict[str, Any]) -> Made:
    a, b, c = rng.randint(12, 99), rng.randint(12, 99), rng.randint(1, 500)
    op = rng.choice(["*", "+", "-"])
    expr = f"{a} {op} {b} + {c}"
    value = str(eval(expr))
    out = _fresh(rng, tree)
    return (f"Start the python3 REPL, compute {expr}, write the result to {out} from Python, "
            "then leave the REPL.",
            {"files": {out: {"equals": value}},
             "goal": {"program": "python3", "expr": expr, "out": out}})  # fmt: skip


def _pager(rng: random.Random, tree: dict[str, Any]) -> Made:
    words = [rng.choice(vocab.WORDS) + str(rng.randint(1, 9)) for _ in range(60)]
    name = _fresh(rng, tree, "lst")
    tree["files"][name] = "".join(f"{i:03d} {w}\n" for i, w in enumerate(words, start=1))
    line = rng.randint(10, 36)  # less shows it on the first row (60 - 23 rows below it)
    out = _fresh(rng, tree)
    return (f"Open {name} in less, go to line {line}, read its word, quit less and write the "
            f"word to {out}.",
            {"files": {out: {"contains": [words[line - 1]]}},
             "goal": {"program": "less", "file": name, "line": line, "out": out}})  # fmt: skip


def _edit(rng: random.Random, tree: dict[str, Any]) -> Made:
    name = rng.choice(sorted(tree["files"]))
    text = vocab.random_text(rng)
    return (f"Using vi, add the line '{text}' at the end of {name} and save it.",
            {"files": {name: {"contains": [text + "\n"]}},
             "goal": {"program": "vi", "file": name, "text": text}})  # fmt: skip


def _replace(rng: random.Random, tree: dict[str, Any]) -> Made:
    old = rng.choice(vocab.WORDS)
    new = rng.choice([w for w in vocab.WORDS if w != old]) + "_new"
    name = _fresh(rng, tree)
    lines = [f"{old} {rng.choice(vocab.WORDS)} {i}" for i in range(rng.randint(3, 6))]
    tree["files"][name] = "\n".join(lines) + "\n"
    return (f"Using vi, replace every '{old}' with '{new}' in {name} and save it.",
            {"files": {name: {"contains": [new], "lacks": [f"{old} "]}},
             "goal": {"program": "vi", "file": name, "old": old, "new": new}})  # fmt: skip


def _interrupt(rng: random.Random, tree: dict[str, Any]) -> Made:
    seconds = rng.choice([60, 100, 300, 600])
    out = _fresh(rng, tree, "done")
    return (f"Run sleep {seconds}, interrupt it with Ctrl-C, then create the file {out}.",
            {"exists": [out], "goal": {"program": "sleep", "seconds": seconds, "out": out}})


def _top(rng: random.Random, tree: dict[str, Any]) -> Made:
    out = _fresh(rng, tree, "count")
    return (f"Run top, read how many tasks it shows in total, quit it with q and write that "
            f"number to {out}.",
            {"exists": [out], "goal": {"program": "top", "out": out}})  # fmt: skip


def _shell(rng: random.Random, tree: dict[str, Any]) -> Made:
    name = rng.choice(sorted(tree["files"]))
    text = tree["files"][name]
    variant = rng.randrange(3)
    if variant == 0:
        n = str(len(text.splitlines()))
        return (f"Show how many lines {name} has.",
                {"output_contains": [f"{n} {name}"], "goal": {"command": f"wc -l {name}"}})
    if variant == 1:
        first = text.splitlines()[0] if text.strip() else ""
        return (f"Show the first line of {name}.",
                {"output_contains": [first], "goal": {"command": f"head -n 1 {name}"}})
    word = rng.choice(text.split() or ["x"])
    return (f"Show the lines of {name} that contain '{word}'.",
            {"output_contains": [word], "goal": {"command": f"grep -n -- '{word}' {name}"}})


_MAKERS: dict[str, Callable[[random.Random, dict[str, Any]], Made]] = {
    "repl": _repl, "pager": _pager, "edit": _edit, "replace": _replace,
    "interrupt": _interrupt, "top": _top, "shell": _shell,
}  # fmt: skip


class TtyTaskSampler:
    """Deterministic task generator: ``sample(n, seed=s)`` is a pure function of ``(n, s)``.

    Args:
        kinds: Task kinds to draw from (default: all of :data:`KINDS`).

    Raises:
        ValueError: an unknown kind (the message lists the known ones).
    """

    def __init__(self, kinds: tuple[str, ...] = KINDS) -> None:
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown task kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
        self.kinds = tuple(kinds)

    def sample(self, n: int, *, seed: int) -> list[Task]:
        """``n`` tasks; kinds cycle in a seeded order (all appear when ``n >= len(kinds)``)."""
        rng = random.Random(f"tty-tasks-{seed}")
        order = list(self.kinds)
        rng.shuffle(order)
        tasks = []
        for i in range(n):
            kind = order[i % len(order)]
            tree = _tree(rng)
            instruction, check = _MAKERS[kind](rng, tree)
            tasks.append(Task(id=f"tty-{seed}-{i:04d}-{kind}", domain="tty",
                              instruction=instruction, kind=kind, setup=tree, check=check))  # fmt: skip
        return tasks


__all__ = ["KINDS", "TtyTaskSampler"]
