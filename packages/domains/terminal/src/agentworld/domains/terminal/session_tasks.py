"""Task kinds of ordinary shell sessions: state the episode itself creates, then reads.

The file-system kinds of :mod:`agentworld.domains.terminal.tasks` mostly read
the set-up tree. These kinds make the agent create state during the episode
(shell variables, new files, appended lines, scripts) and then read it back
through arithmetic, control flow, pipelines of text tools, exit statuses and
``python3``, the mix of Terminal-Bench style sessions. Each maker takes the
random state and the set-up tree (it may add a set-up file it needs) and
returns ``(instruction, check)``; ``check["goal"]`` names the intended
operation for the scripted expert (:mod:`agentworld.domains.terminal.session_expert`).

Kinds: ``arith``, ``loop``, ``pipeline``, ``write_lines``, ``script``,
``condition``, ``status``, ``compare``, ``heredoc`` (a here-document: a file
written verbatim or with variables expanded, or a ``python3 -`` program; the
expert types it as one multi-line action).
"""

from __future__ import annotations

import random
import re
from posixpath import basename, dirname, join, splitext
from typing import Any

from agentworld.domains.terminal import vocab

SESSION_KINDS = (
    "arith",
    "loop",
    "pipeline",
    "write_lines",
    "script",
    "condition",
    "status",
    "compare",
    "heredoc",
)
Tree = dict[str, Any]
Made = tuple[str, dict[str, Any]]

_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
        "/": lambda a, b: a // b, "%": lambda a, b: a % b}
_OP_WORDS = {"+": "sum", "-": "difference", "*": "product", "/": "integer quotient",
             "%": "remainder"}
VAR_NAMES = ("x", "y", "n", "count", "total", "a", "b", "size", "num", "limit")


def _fresh(rng: random.Random, t: Tree, parent: str, ext: str | None) -> str:
    used = set(t["files"]) | set(t["dirs"])
    for _ in range(200):
        stem = rng.choice(vocab.STEMS)
        if rng.random() < 0.4:
            stem = f"{stem}_{rng.randint(2, 99)}"
        path = join(parent, f"{stem}.{ext}" if ext else stem)
        if path not in used:
            return path
    raise RuntimeError("could not find a fresh name")


def _arith(rng: random.Random, t: Tree) -> Made:
    op = rng.choice(sorted(_OPS))
    a, b = rng.randint(2, 60), rng.randint(2, 12)
    v1, v2 = rng.sample(VAR_NAMES, 2)
    value = _OPS[op](a, b)
    return (
        f"Set the shell variable {v1} to {a} and {v2} to {b}, then print the "
        f"{_OP_WORDS[op]} {v1} {op} {v2} using shell arithmetic.",
        {"output_regex": rf"(?m)^{value}$",
         "goal": {"op": "arith", "vars": [v1, v2], "values": [a, b], "sign": op}},
    )


def _loop(rng: random.Random, t: Tree) -> Made:
    d = _fresh(rng, t, rng.choice(["", *t["dirs"]]), None)
    n = rng.randint(2, 5)
    stem = rng.choice(["part", "file", "note", "day", "item", "log"])
    word = rng.choice(vocab.WORDS)
    files = {join(d, f"{stem}{i}.txt"): {"equals": f"{word} {i}\n"} for i in range(1, n + 1)}
    return (
        f"Create the directory {d} and in it, with a loop, the files {stem}1.txt to "
        f"{stem}{n}.txt, each containing the line '{word} N' where N is its number.",
        {"dirs": [d], "files": files,
         "goal": {"op": "loop", "dir": d, "stem": stem, "n": n, "word": word}},
    )


def _table(rng: random.Random, t: Tree) -> tuple[str, list[list[str]]]:
    """A CSV set-up file (added to the tree when none exists: a header and 2-4 rows) and its
    rows with the header."""
    csvs = sorted(p for p in t["files"] if p.endswith(".csv"))
    if csvs:
        path = rng.choice(csvs)
    else:
        if len(t["files"]) >= 8:  # trees hold 4-8 files: this table replaces one
            del t["files"][rng.choice(sorted(t["files"]))]
        path = _fresh(rng, t, rng.choice(["", *t["dirs"]]), "csv")
        head = rng.choice(["name,qty", "item,count", "city,visits", "person,score"])
        names = [rng.choice(vocab.WORDS + vocab.PLACES).lower() for _ in range(rng.randint(2, 4))]
        rows = [head] + [f"{x},{rng.randint(1, 40)}" for x in names]
        t["files"][path] = "\n".join(rows) + "\n"
    rows = [line.split(",") for line in t["files"][path].splitlines() if line]
    return path, rows


def _pipeline(rng: random.Random, t: Tree) -> Made:
    path, rows = _table(rng, t)
    body = rows[1:]
    variant = rng.randrange(3) if body else 0
    if variant == 0:
        names = sorted(set(r[0] for r in body))
        return (
            f"Print the distinct values of the first column of {path} (without the header), "
            "sorted, one per line.",
            {"output_regex": "(?s)^" + "".join(re.escape(x) + r"\r?\n" for x in names) + "$"
             if names else "^$",
             "goal": {"op": "distinct", "path": path}},
        )
    if variant == 1:
        total = sum(int(r[1]) for r in body)
        return (
            f"Print the sum of the second column of {path} (skip the header line).",
            {"output_regex": rf"(?m)^{total}$", "goal": {"op": "column_sum", "path": path}},
        )
    n = len(body)
    return (
        f"How many data rows (not counting the header) does {path} have?",
        {"output_regex": rf"(?m)^\s*{n}$", "goal": {"op": "row_count", "path": path}},
    )


def _write_lines(rng: random.Random, t: Tree) -> Made:
    path = _fresh(rng, t, rng.choice(["", *t["dirs"]]), rng.choice(["txt", "md", "list"]))
    lines = [vocab.random_text(rng) for _ in range(rng.randint(2, 4))]
    return (
        f"Write these {len(lines)} lines to a new file {path}: "
        + "; ".join(lines) + ". Then show how many lines it has.",
        {"files": {path: {"equals": "\n".join(lines) + "\n"}},
         "output_regex": rf"(?m)^\s*{len(lines)}\b",
         "goal": {"op": "write_lines", "path": path, "lines": lines}},
    )


def _script(rng: random.Random, t: Tree) -> Made:
    path = _fresh(rng, t, rng.choice(["", "", *t["dirs"]]), "py")
    n = rng.randint(3, 30)
    kind = rng.randrange(3)
    if kind == 0:
        code, value, what = f"print(sum(range(1, {n} + 1)))", sum(range(1, n + 1)), \
            f"the sum of the numbers 1 to {n}"
    elif kind == 1:
        code, value, what = f"print({n} ** 2)", n**2, f"the square of {n}"
    else:
        word = rng.choice(vocab.WORDS)
        code, value, what = f"print('{word}'.upper())", word.upper(), f"the word {word} in capitals"
    return (
        f"Write a Python script {path} that prints {what}, then run it with python3.",
        {"exists": [path], "output_regex": rf"(?m)^{value}$",
         "goal": {"op": "script", "path": path, "code": code}},
    )


def _condition(rng: random.Random, t: Tree) -> Made:
    if rng.random() < 0.5:
        path, exists = rng.choice(sorted(t["files"])), True
    else:
        path, exists = _fresh(rng, t, rng.choice(["", *t["dirs"]]), "txt"), False
    yes, no = rng.choice([("yes", "no"), ("found", "missing"), ("present", "absent")])
    return (
        f"Using an if statement, print {yes} if the file {path} exists and {no} otherwise.",
        {"output_regex": rf"(?m)^{yes if exists else no}$",
         "goal": {"op": "condition", "path": path, "yes": yes, "no": no}},
    )


def _status(rng: random.Random, t: Tree) -> Made:
    path = rng.choice(sorted(t["files"]))
    content = t["files"][path]
    words = sorted(set(re.findall(r"[A-Za-z]{4,}", content)))
    word = rng.choice(words) if words and rng.random() < 0.5 else rng.choice(vocab.WORDS)
    code = 0 if word in content else 1
    return (
        f"Check quietly whether {path} contains {word} with grep, then print grep's exit status.",
        {"output_regex": rf"(?m)^{code}$", "goal": {"op": "status", "path": path, "word": word}},
    )


def _compare(rng: random.Random, t: Tree) -> Made:
    src = rng.choice(sorted(t["files"]))
    stem, ext = splitext(basename(src))
    dst = join(dirname(src), f"{stem}_new{ext}")
    if dst in t["files"]:
        dst = _fresh(rng, t, dirname(src), ext[1:] or None)
    text = vocab.random_text(rng)
    return (
        f"Copy {src} to {dst}, append the line '{text}' to the copy, then show the "
        "differences between the two files with diff.",
        {"files": {dst: {"equals": t["files"][src] + text + "\n"}},
         "output_contains": [f"> {text}"],
         "goal": {"op": "compare", "src": src, "dst": dst, "text": text}},
    )


def _heredoc(rng: random.Random, t: Tree) -> Made:
    variant = rng.randrange(3)
    if variant == 2:
        n = rng.randint(3, 6)
        squares = "".join(rf"{i * i}\r?\n" for i in range(1, n + 1))
        return (
            f"Feed python3 a short program through a here-document (python3 - <<EOF) that "
            f"prints the squares of 1 to {n}, one per line.",
            {"output_regex": f"(?s)^{squares}$", "goal": {"op": "heredoc", "n": n}},
        )
    path = _fresh(rng, t, rng.choice(["", *t["dirs"]]), rng.choice(["txt", "conf", "md"]))
    if variant == 1:
        var, value = rng.choice(VAR_NAMES), rng.randint(2, 40)
        lines = [f"{var}={value}", f"twice={2 * value}"]
        instruction = (
            f"Set the shell variable {var} to {value}, then write {path} with a here-document "
            f"whose lines are {var}=<its value> and twice=<double it>, expanded by the shell, "
            "and print the file."
        )
    else:
        lines = [vocab.random_text(rng) for _ in range(rng.randint(1, 3))]
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(["path=$HOME/bin", "cost: $5"]))
        var = value = None
        instruction = (
            f"Write {path} with a here-document, keeping the text exactly as given (no "
            "expansion), then print the file. Its lines: "
            + ", ".join(f"'{x}'" for x in lines)
        )
    return instruction, {
        "files": {path: {"equals": "\n".join(lines) + "\n"}},
        "output_contains": [lines[-1]],
        "goal": {"op": "heredoc", "path": path, "lines": lines, "var": var, "value": value},
    }


SESSION_MAKERS = {
    "arith": _arith,
    "loop": _loop,
    "pipeline": _pipeline,
    "write_lines": _write_lines,
    "script": _script,
    "condition": _condition,
    "status": _status,
    "compare": _compare,
    "heredoc": _heredoc,
}
