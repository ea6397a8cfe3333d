"""Vocabulary for generated file trees: directory names, file names, contents.

Contents are short (2-5 lines) and of several genres (to-do lists, logs,
CSV tables, config files, notes, recipes, scripts) so that ``cat``, ``grep``
and ``wc`` outputs are varied but observations stay short. No apostrophes or
shell-special characters appear, so texts can be single-quoted directly.
"""

from __future__ import annotations

import random
from posixpath import basename, dirname, join
from typing import Any

DIRS = (
    "docs notes src projects backup logs data archive reports music photos scripts config "
    "drafts old misc research recipes travel budget work personal tmp_files downloads "
    "shared lib assets letters invoices meetings ideas exports inbox garden courses "
    "papers tools site build samples"
).split()
STEMS = (
    "todo notes readme report summary plan ideas list draft config settings server access "
    "errors sales budget contacts inventory schedule agenda minutes recipe shopping "
    "packing reading groceries backup deploy cleanup setup main utils people scores "
    "prices orders tasks journal changelog faq letter invoice quotes birds plants books "
    "movies trips week1 week2 q1 q2 alpha beta legacy final index words names"
).split()
WORDS = (
    "apple banana cherry carrot onion pepper lemon coffee butter bread rice honey salmon "
    "garlic tomato olive basil walnut mango peach ticket passport charger camera jacket "
    "umbrella notebook stapler printer monitor keyboard router cable battery lantern "
    "compass blanket kettle mirror helmet"
).split()
PEOPLE = (
    "Anna Ben Carla David Elena Farid Grace Hugo Ines Jonas Kira Liam Maya Nora Omar "
    "Priya Quinn Rosa Sam Tara"
).split()
VERBS = (
    "call email visit fix review water clean update pay book order return check pack "
    "print sign renew plan cancel test"
).split()
PLACES = (
    "Lisbon Oslo Kyoto Lima Dakar Quebec Hanoi Porto Tunis Perth Bergen Cusco Accra "
    "Malaga Tartu Riga"
).split()
LEVELS = "INFO INFO WARN ERROR DEBUG".split()
EVENTS = [
    "server started",
    "user login",
    "cache miss",
    "disk almost full",
    "job finished",
    "connection reset",
    "backup done",
    "request timeout",
    "config reloaded",
    "worker idle",
]
KEYS = "host port user timeout retries mode level path debug cache".split()
VALUES = "localhost 8080 admin 30 3 fast info /var/data false on 5432 guest verbose true 12".split()
NOTES = [
    "Meeting moved to {day}.",
    "Ask {person} about the {word}.",
    "Send the report by {day}.",
    "Remember the {word} for {person}.",
    "Trip to {place} in {month}.",
    "The {word} costs {num} euros.",
    "{person} will bring the {word}.",
    "Budget review on {day}.",
    "New {word} arrived today.",
    "Flight to {place} is booked.",
]
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
MONTHS = "January March April June July August October December".split()
EXTENSIONS = {
    "todo": "txt",
    "note": "txt",
    "log": "log",
    "csv": "csv",
    "conf": "conf",
    "md": "md",
    "py": "py",
    "sh": "sh",
}


def _note(rng: random.Random) -> str:
    return rng.choice(NOTES).format(
        day=rng.choice(DAYS),
        person=rng.choice(PEOPLE),
        word=rng.choice(WORDS),
        place=rng.choice(PLACES),
        month=rng.choice(MONTHS),
        num=rng.randint(2, 99),
    )


def _lines(genre: str, rng: random.Random, n: int) -> list[str]:
    if genre == "todo":
        return [f"- {rng.choice(VERBS)} {rng.choice(WORDS + PEOPLE)}" for _ in range(n)]
    if genre == "log":
        start = rng.randint(6, 20)
        return [
            f"2024-0{rng.randint(1, 9)}-1{i} {start + i:02d}:{rng.randint(0, 59):02d} "
            f"{rng.choice(LEVELS)} {rng.choice(EVENTS)}"
            for i in range(n)
        ]
    if genre == "csv":
        head = rng.choice(["name,qty,price", "item,count", "city,visits", "person,score"])
        cols = head.count(",")
        rows = [
            ",".join(
                [
                    rng.choice(WORDS + PLACES + PEOPLE).lower(),
                    *(str(rng.randint(1, 40)) for _ in range(cols)),
                ]
            )
            for _ in range(n - 1)
        ]
        return [head, *rows]
    if genre == "conf":
        keys = rng.sample(KEYS, n)
        return [f"{k}={rng.choice(VALUES)}" for k in keys]
    if genre == "md":
        return [
            f"# {rng.choice(STEMS).capitalize()} {rng.choice(PLACES)}",
            *(_note(rng) for _ in range(n - 1)),
        ]
    if genre == "py":
        name = rng.choice(WORDS)
        return [
            f"def {name}(x):",
            f"    return x * {rng.randint(2, 9)}",
            "",
            f"print({name}({rng.randint(1, 20)}))",
        ][: max(n, 2)]
    if genre == "sh":
        return ["#!/bin/sh", f"echo {rng.choice(EVENTS)}", f"ls {rng.choice(DIRS)}"][:n]
    return [_note(rng) for _ in range(n)]


def random_file(rng: random.Random, taken: set[str]) -> tuple[str, str]:
    """(file name, content) of a random genre; the name is not in ``taken``.

    Content is 2-5 lines ending with a newline.
    """
    genre = rng.choice(list(EXTENSIONS))
    for _ in range(100):
        stem = rng.choice(STEMS)
        name = (
            f"{stem}.{EXTENSIONS[genre]}"
            if rng.random() < 0.8
            else f"{stem}_{rng.randint(1, 9)}.{EXTENSIONS[genre]}"
        )
        if name not in taken:
            break
    lines = _lines(genre, rng, rng.randint(2, 5))
    return name, "\n".join(lines) + "\n"


def random_text(rng: random.Random) -> str:
    """A short line of text (a note or a to-do item) without quotes."""
    return _note(rng) if rng.random() < 0.5 else f"{rng.choice(VERBS)} {rng.choice(WORDS)}"


def random_tree(rng: random.Random) -> dict[str, Any]:
    """Set-up data ``{"dirs": [...], "files": {path: content}}`` of a small random tree."""
    top = rng.sample(DIRS, rng.randint(2, 4))
    dirs = list(top)
    for d in top:
        if rng.random() < 0.35:
            dirs.append(join(d, rng.choice([x for x in DIRS if x != d])))
    files: dict[str, str] = {}
    for _ in range(rng.randint(4, 8)):
        parent = rng.choice(["", "", *dirs])
        taken = {basename(p) for p in files if dirname(p) == parent} | set(dirs)
        name, content = random_file(rng, taken)
        files[join(parent, name)] = content
    return {"dirs": dirs, "files": files}
