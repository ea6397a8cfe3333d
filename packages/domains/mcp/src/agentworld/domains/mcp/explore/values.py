"""Values mined from a tool environment, for any JSON-schema tool list: the server's command line
(paths, roots, URLs, ``--option VALUE`` pairs), the resources and prompts it lists, the
arguments of calls that succeeded, and the responses and error messages seen so far (ids,
names, paths, branch names, table and column names, quoted names an error offers).

A :class:`ValuePool` keeps them by key (a response's JSON key, an option's name, a kind such as
``path``, ``table``, ``sha``); :func:`names_match` says whether an argument name refers to a key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentworld.core.tool_coverage import is_error_text, parse_response
from agentworld.domains.mcp.command_line import split_command

MAX_VALUE = 200
_PATH = re.compile(r"(?<![\w.:/])(/(?:[\w.@+-]+/)*[\w.@+-]+)")
_URL = re.compile(r"https?://[^\s'\"<>)]+")
_SHA = re.compile(r"\b([0-9a-f]{7,40})\b")
_QUOTED = re.compile(r"['\"`]([^'\"`\n]{1,60})['\"`]")
_BRANCH_LINE = re.compile(r"^\s*[*+]?\s*([\w./-]+)\s*$", re.MULTILINE)
_FILE = re.compile(r"(?<![\w/])((?:[\w.-]+/)*[\w-]+\.[A-Za-z0-9]{1,8})\b")
_KV = re.compile(r"^[ \t]*([A-Za-z][\w ]{0,30}):[ \t]+(\S.{0,80})$", re.MULTILINE)
_TABLE_SQL = re.compile(r"\b(?:CREATE TABLE(?: IF NOT EXISTS)?|INTO|FROM|UPDATE)\s+[\"`]?(\w+)",
                        re.IGNORECASE)
_COLUMNS_SQL = re.compile(r"CREATE TABLE(?: IF NOT EXISTS)?\s+[\"`]?(\w+)[\"`]?\s*\((.*)\)",
                          re.IGNORECASE | re.DOTALL)
_WORD = re.compile(r"[a-z0-9]+")


def words(name: str) -> list[str]:
    """The lower-case words of an identifier (``repoPath``, ``repo_path``, ``db-path`` ->
    ``["repo", "path"]``)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return _WORD.findall(spaced.lower())


def names_match(arg: str, key: str) -> bool:
    """Whether argument ``arg`` refers to values kept under ``key``: equal words, one's words a
    prefix-wise match of the other's (``repo_path`` ~ ``repository``, ``table_name`` ~
    ``table``, ``note_id`` ~ ``id``, ``command`` ~ ``allow_commands``), or singular/plural
    (``files`` ~ ``file``)."""
    a, k = words(arg), words(key)
    if not a or not k:
        return False
    if a == k or [w.rstrip("s") for w in a] == [w.rstrip("s") for w in k]:
        return True
    head = a[:-1] if a[-1] in ("name", "id", "path", "s") and len(a) > 1 else a
    return any(x.startswith(y) or y.startswith(x) for x in head for y in k if min(len(x), len(y)) >= 3) \
        and (len(k) == 1 or a[-1].rstrip("s") == k[-1].rstrip("s") or k[-1] == "path")


class ValuePool:
    """Values by key, most recent first, each key holding distinct values.

    Attributes:
        by_key: ``{key: [value, ...]}``.
        roots: Directories (and files) the server's command line names, absolute.
        tables: ``{table: [column, ...]}`` seen in responses and in statements that succeeded.
    """

    def __init__(self) -> None:
        self.by_key: dict[str, list[Any]] = {}
        self.roots: list[str] = []
        self.tables: dict[str, list[str]] = {}

    def add(self, key: str, value: Any) -> None:
        """Keep ``value`` under ``key`` (scalars only; strings up to :data:`MAX_VALUE`)."""
        if isinstance(value, bool) or value is None:
            return
        if isinstance(value, str) and not (0 < len(value) <= MAX_VALUE):
            return
        if not isinstance(value, str | int | float):
            return
        values = self.by_key.setdefault(key, [])
        if value in values:
            values.remove(value)
        values.insert(0, value)
        del values[40:]

    def get(self, key: str) -> list[Any]:
        """Values under ``key`` exactly."""
        return list(self.by_key.get(key, []))

    def matching(self, arg: str) -> list[Any]:
        """Values under every key that ``arg`` refers to (:func:`names_match`)."""
        out: list[Any] = []
        for key, values in self.by_key.items():
            if names_match(arg, key):
                out += [v for v in values if v not in out]
        return out

    def add_table(self, table: str, columns: Iterable[str] = ()) -> None:
        """Record a table and (some of) its columns."""
        cols = self.tables.setdefault(table, [])
        cols += [c for c in columns if c not in cols]
        self.add("table", table)


def mine_command(pool: ValuePool, argv: list[str], list_dirs: bool = True) -> None:
    """Values of a server's command line: ``--name VALUE`` and ``--name=VALUE`` under the
    option's name, paths (roots; with ``list_dirs`` a root directory's entries, names and
    absolute paths, up to 50), URLs. ``argv[0]`` (the program) is skipped."""
    option = None
    for token in argv[1:]:
        value = token
        if token.startswith("--") and "=" in token:
            option, value = token[2:].split("=", 1)
        elif token.startswith("-"):
            option = token.lstrip("-")
            continue
        if option:
            pool.add(option, value)
        option = None
        if _URL.fullmatch(value):
            pool.add("url", value)
        elif value.startswith("/") or value.startswith("~"):
            path = os.path.expanduser(value)
            pool.roots.append(path)
            pool.add("path", path)
            if list_dirs and os.path.isdir(path):
                _mine_dir(pool, Path(path))


def _mine_dir(pool: ValuePool, root: Path) -> None:
    try:
        entries = sorted(p for p in root.iterdir() if not p.name.startswith("."))[:50]
    except OSError:
        return
    for entry in entries:
        pool.add("path", str(entry))
        pool.add("file" if entry.is_file() else "directory", entry.name)


def mine_command_line(pool: ValuePool, server: str) -> None:
    """:func:`mine_command` of a command line given as one string (a bad quote: split on
    whitespace). An ``env`` wrapper (:func:`~agentworld.domains.mcp.command_line.split_command`)
    adds its ``-C DIR`` as a root (the folder the server runs in) and each ``NAME=VALUE`` as
    option ``name`` (lower case), its comma-separated items one by one (``ALLOW_COMMANDS=ls,cat``
    -> ``allow_commands``: ``ls``, ``cat``); the program's own path is never a root."""
    line = split_command(server)
    lists = {name: value.split(",") for name, value in line.variables.items() if "," in value}
    settings = [f"--{name.lower()}={value}" for name, value in line.variables.items()
                if name not in lists]
    mine_command(pool, [line.program[0] if line.program else "", *settings,
                        *([line.chdir] if line.chdir else []), *line.program[1:]])
    for name, items in lists.items():
        for item in reversed(items):
            pool.add(name.lower(), item.strip())


def mine_listing(pool: ValuePool, items: Iterable[dict[str, Any]], kind: str) -> None:
    """Names and URIs of listed resources or prompts (``kind``: ``resource``/``prompt``)."""
    for item in items:
        for key in ("name", "uri", "uriTemplate"):
            if isinstance(item.get(key), str):
                pool.add(f"{kind}_{key}" if key != "uri" else "uri", item[key])
                if key == "uri" and item[key].startswith("file://"):
                    pool.add("path", item[key].removeprefix("file://"))


def mine_call(pool: ValuePool, tool: str, arguments: dict[str, Any], ok: bool) -> None:
    """Arguments of a call that succeeded (``ok``), by name; an SQL statement's tables and
    columns."""
    if not ok:
        return
    for name, value in arguments.items():
        if isinstance(value, list):
            for item in value:
                pool.add(name, item)
        else:
            pool.add(name, value)
        if isinstance(value, str):
            for table, cols in _COLUMNS_SQL.findall(value):
                pool.add_table(table, [c.split()[0].strip("\"`") for c in cols.split(",")
                                       if c.split() and c.split()[0].upper() not in
                                       ("PRIMARY", "FOREIGN", "UNIQUE", "CHECK", "CONSTRAINT")])
            for table in _TABLE_SQL.findall(value):
                if table.upper() not in ("SELECT", "SQLITE_MASTER"):
                    pool.add_table(table)


def mine_response(pool: ValuePool, tool: str, text: str) -> None:
    """Values of one response: the leaves of its value by key (JSON or a Python literal; a
    ``name`` in a table-listing tool's answer is a table, in a table-describing tool's answer a
    column), else ``key: value`` lines, paths, file names, URLs, commit hashes, one-word lines
    (branch names); an error's quoted names under ``suggested``."""
    if is_error_text(text):
        for quoted in _QUOTED.findall(text):
            pool.add("suggested", quoted.strip())
        return
    value = parse_response(text)
    tool_words = {w.rstrip("s") for w in words(tool)}
    if value is not None and not isinstance(value, str | int | float):
        for key, leaf in _leaves(value):
            pool.add(key, leaf)
            if key in ("table", "table_name", "tbl_name") and isinstance(leaf, str):
                pool.add_table(leaf)
            elif key == "name" and "table" in tool_words and isinstance(leaf, str):
                (pool.add_table(leaf) if "list" in tool_words else _column(pool, tool, leaf))
        _mine_named_items(pool, value)
        return
    for key, val in _KV.findall(text):
        pool.add("_".join(words(key)), val.strip())
    for path in _PATH.findall(text):
        pool.add("path", path)
    for url in _URL.findall(text):
        pool.add("url", url)
    for name in _FILE.findall(text):
        pool.add("file", name)
    for sha in _SHA.findall(text):
        if any(c.isalpha() for c in sha) and any(c.isdigit() for c in sha):
            pool.add("sha", sha)
    lines = text.strip().splitlines()
    if 0 < len(lines) <= 30 and all(_BRANCH_LINE.fullmatch(line) for line in lines):
        for name in _BRANCH_LINE.findall(text):
            pool.add("branch" if "branch" in tool_words else "name", name)


def _column(pool: ValuePool, tool: str, column: str) -> None:
    table = next(iter(pool.get("table_name") or pool.get("table")), None)
    if table is not None:
        pool.add_table(table, [column])
    pool.add("column", column)


def _mine_named_items(pool: ValuePool, value: Any, key: str = "", depth: int = 0) -> None:
    """The ``name`` of each object in a list kept under the list's key made singular
    (``{"tables": [{"name": "sales", "columns": [{"name": "id"}]}]}``: table ``sales`` with
    column ``id``; ``"entities"``: ``entity``), where a plain leaf walk sees only ``name``."""
    if depth > 6:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            _mine_named_items(pool, v, str(k), depth + 1)
        return
    if not isinstance(value, list | tuple):
        return
    kind = singular("_".join(words(key)))
    for item in value[:50]:
        if not isinstance(item, dict):
            continue
        name = item.get("name")
        if kind and isinstance(name, str) and kind != "name":
            if kind == "table":
                columns = [c.get("name") for c in item.get("columns") or []
                           if isinstance(c, dict) and isinstance(c.get("name"), str)]
                pool.add_table(name, columns)
                for column in columns:
                    pool.add("column", column)
            else:
                pool.add(kind, name)
        _mine_named_items(pool, item, "", depth + 1)


def singular(word: str) -> str:
    """A crude singular of an English noun: ``entities`` -> ``entity``, ``branches`` ->
    ``branch``, ``tables`` -> ``table``."""
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _leaves(value: Any, key: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, str(k))]
    if isinstance(value, list | tuple):
        return [p for v in value[:50] for p in _leaves(v, key)]
    return [(key, value)] if key else []
