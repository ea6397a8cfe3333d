"""Arguments of a call from a tool's JSON Schema and the values mined so far.

Each property of ``inputSchema`` gets, in order of preference: a value typed by its name and
description (an SQL ``query`` gets a statement of the kind the tool describes over the tables
seen; a path gets one under a root from the server's command line; a timezone an IANA name; an
``expression`` arithmetic; a
name the tool creates a fresh one; a free-text field a sentence; examples quoted in the
description), a mined value that refers to it (:func:`~.values.names_match`), else a value
drawn from its schema (:func:`~.schema_values.schema_examples`). Every candidate is checked
against the property's schema; required properties always appear, optional ones sometimes.
"""

from __future__ import annotations

import random
import re
import zoneinfo
from pathlib import Path
from typing import Any

from agentworld.domains.mcp.explore.schema_values import kinds, schema_examples, valid, with_definitions
from agentworld.domains.mcp.explore.values import ValuePool, singular, words

CREATE_VERBS = {"create", "add", "new", "insert", "make", "init", "write", "append", "put", "set",
                "register", "upload", "save", "commit", "store", "remember"}
ZONES = ("Europe/London", "America/New_York", "Asia/Tokyo", "Europe/Paris", "Australia/Sydney",
         "America/Los_Angeles", "Asia/Kolkata", "Etc/UTC", "Europe/Berlin", "America/Sao_Paulo")
NOUNS = ("amber", "cedar", "maple", "orbit", "pixel", "river", "stone", "tulip", "velvet", "north")
PEOPLE = ("ada", "bob", "chen", "dana", "eli", "fatima", "gus", "hana")
CITIES = ("Lyon", "Oslo", "Porto", "Kyoto", "Quito", "Tunis", "Perth", "Riga")
OPTIONAL = 0.3
_QUOTED = re.compile(r"'([^'\n]{1,40})'|\"([^\"\n]{1,40})\"")
_NAME_WORDS = {"name", "title", "branch", "table", "key", "label", "tag", "slug", "entity"}
_TEXT_WORDS = {"message", "insight", "text", "body", "content", "comment", "description",
               "note", "observation", "observations", "summary", "prompt", "thought"}
_PATH_WORDS = {"path", "file", "files", "dir", "directory", "folder", "repo", "repository",
               "root", "filename", "filepath", "source", "destination"}
_REF_WORDS = {"revision", "target", "ref", "commit", "sha", "rev", "base", "contains"}
_SECONDS_WORDS = {"timeout", "seconds", "delay", "wait", "duration"}
_COMMAND_WORDS = {"command", "cmd", "argv", "args"}
_OUTPUT_WORDS = {"output", "backup", "destination", "dest", "export", "save", "out", "target"}
_SUFFIXES = {"csv": "csv", "json": "json", "md": "md", "markdown": "md", "html": "html",
             "database": "db", "sqlite": "db", "db": "db", "yaml": "yaml", "xml": "xml"}
_MATH_WORDS = {"expression", "expr", "formula", "equation", "calculation"}


def creates(tool: dict[str, Any]) -> bool:
    """Whether a tool makes something (a verb of :data:`CREATE_VERBS` in its name, else
    ``annotations.readOnlyHint`` false with no read verb)."""
    name = set(words(tool.get("name", "")))
    return bool(name & CREATE_VERBS)


def names_created(tool: dict[str, Any], prop_words: set[str]) -> bool:
    """Whether a name argument (its words ``prop_words``) names what ``tool`` creates: a bare
    ``name``/``title``, or a noun the tool's name has (``index_name`` of ``create_index``;
    not its ``table_name``, an existing table the index is on)."""
    nouns = {singular(w) for w in prop_words - {"name", "title", "label", "key", "slug", "new"}}
    return not nouns or bool(nouns & {singular(w) for w in words(tool.get("name", ""))})


def sql_kind(tool: dict[str, Any], prop: str, schema: dict[str, Any]) -> str | None:
    """``select``, ``write``, ``create`` or ``any`` when property ``prop`` takes an SQL
    statement (its or the tool's description says SQL, or its name is ``sql``/``query`` of a
    tool that mentions a query kind), else ``None``."""
    text = f"{tool.get('description', '')} {schema.get('description', '')}".lower()
    named = set(words(prop)) & {"sql", "query", "statement"}
    create = re.search(r"\bcreate\b[^.]{0,20}\btable\b", text) is not None
    if not named or not ("sql" in text or "select" in text or create):
        return None
    if create:
        return "create"
    if any(w in text for w in ("insert", "update", "delete")):
        return "write"
    return "select" if "select" in text or "read" in text else "any"


class ArgumentMaker:
    """Arguments for tool calls (see the module docstring).

    Args:
        rng: The episode's random source.
        seed: Seed of the schema-drawn values.
    """

    def __init__(self, rng: random.Random, seed: int = 0) -> None:
        self.rng, self.seed, self._fresh = rng, seed, 0
        self._table: str | None = None
        #: Whether the last :meth:`arguments` had to make up a required value that should
        #: refer to something (no typed or mined value fitted): the call will likely fail.
        self.guessed = False

    def arguments(self, tool: dict[str, Any], pool: ValuePool) -> dict[str, Any]:
        """An arguments object for ``tool`` (wire form: ``name``, ``description``,
        ``inputSchema``)."""
        root = tool.get("inputSchema") or {}
        required = set(root.get("required") or [])
        out: dict[str, Any] = {}
        guessed = False
        self._table = None
        for prop, schema in (root.get("properties") or {}).items():
            schema = schema if isinstance(schema, dict) else {}
            if prop not in required and (self.rng.random() > OPTIONAL or "default" in schema
                                         and self.rng.random() < 0.5):
                continue
            self.guessed = False
            value = self.value(tool, prop, with_definitions(schema, root), pool)
            guessed |= prop in required and (self.guessed or value is None)
            if value is not None or prop in required:
                out[prop] = value
            if "table" in words(prop) and isinstance(value, str) and value in pool.tables:
                self._table = value  # its columns for a `column_name` after it
        self.guessed = guessed
        return out

    def value(self, tool: dict[str, Any], prop: str, schema: dict[str, Any], pool: ValuePool) -> Any:
        """One property's value (``None`` when nothing valid could be made)."""
        for candidate in self._typed(tool, prop, schema, pool) + self._mined(prop, schema, pool):
            if valid(schema, candidate):
                return candidate
        drawn = self._drawn(prop, schema, pool)
        return drawn[0] if drawn else None

    def _mined(self, prop: str, schema: dict[str, Any], pool: ValuePool) -> list[Any]:
        found = pool.get(prop) or pool.matching(prop)  # a `file_hash` seen as such: not a file
        if "array" in kinds(schema) and found:
            return [self.rng.sample(found, min(len(found), self.rng.randint(1, 2)))]
        return self.rng.sample(found, len(found)) if self.rng.random() < 0.8 else found[:1]

    def _drawn(self, prop: str, schema: dict[str, Any], pool: ValuePool) -> list[Any]:
        types = kinds(schema)
        if "object" in types and isinstance(schema.get("properties"), dict):
            inner = {"name": prop, "inputSchema": schema}
            return [self.arguments(inner, pool)]
        if "array" in types and isinstance(schema.get("items"), dict) and \
                "object" in kinds(schema["items"]):
            item = self._drawn(prop, with_definitions(schema["items"], schema), pool)
            return [item[:1]] if item else []
        plain_text = types == {"string"} and not any(
            k in schema for k in ("pattern", "format", "enum", "const", "minLength"))
        if plain_text:
            self.guessed = True
            return [self._word(prop)]
        if types <= {"integer", "number"} and types and not any(
                k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "enum", "const")):
            return [self.rng.randint(1, 10)]
        examples = schema_examples(schema, self.seed + self.rng.randint(0, 7))
        ascii_first = sorted(examples, key=lambda v: not str(v).isascii())
        return ascii_first[self.rng.randint(0, min(3, len(ascii_first) - 1)):] if ascii_first else []

    def _typed(self, tool: dict[str, Any], prop: str, schema: dict[str, Any],
               pool: ValuePool) -> list[Any]:
        name = set(words(prop))
        desc = str(schema.get("description", ""))
        types = kinds(schema)
        rng = self.rng
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return [rng.choice(schema["enum"])]
        if "default" in schema:  # an `encoding` defaulting to "utf-8": not a made-up word
            return [schema["default"]]
        kind = sql_kind(tool, prop, schema)
        if kind is not None:
            statement = sql_statement(kind, pool, rng, self._fresh_name)
            self.guessed = statement is None
            return [statement or "SELECT 1"]
        if types and not types & {"string", "array"}:
            if types <= {"integer", "number"} and name & {"limit", "count", "max", "lines", "n"}:
                return [rng.randint(1, 5)]
            if types <= {"integer", "number"} and name & _SECONDS_WORDS:  # not 10**20 s
                return [rng.choice((5, 10, 30))]
            return []
        if "array" in types and name & _COMMAND_WORDS:  # an argv: a command, then a file
            files = pool.get("file")
            # a file the argv of an earlier call named (mined back under `command`) is no program
            commands = [c for c in pool.matching(prop)
                        if isinstance(c, str) and " " not in c and c not in files]
            if commands:
                return [[rng.choice(commands), *([rng.choice(files)] if files and
                                                 rng.random() < 0.5 else [])]]
        quoted = [a or b for a, b in _QUOTED.findall(desc)]
        if name & {"timezone", "tz", "zone"} or "iana" in desc.lower():
            zones = [z for z in quoted if z in zoneinfo.available_timezones()] + list(ZONES)
            return [rng.choice(zones)]
        if "HH:MM" in desc or name == {"time"}:
            return [f"{rng.randint(0, 23):02d}:{rng.choice((0, 15, 30, 45)):02d}"]
        if name & {"timestamp", "date", "since", "until", "after", "before"}:
            return [rng.choice(quoted or [f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}"])]
        if name & _MATH_WORDS:  # mcp-server-calculator's `expression`: arithmetic, not a word
            a, b, c = (rng.randint(2, 99) for _ in range(3))
            return [rng.choice((f"{a} {rng.choice('+-*/')} {b}", f"({a} + {b}) * {c}"))]
        if name & {"column", "col", "field"} and self._table and pool.tables.get(self._table):
            return [rng.choice(pool.tables[self._table])]  # a column of the call's table
        if words(prop)[-1:] and words(prop)[-1] in _PATH_WORDS:  # not a `file_hash`
            if name & _OUTPUT_WORDS and pool.roots:
                return [self._new_file(tool, pool)]
            return self._paths(prop, name, types, pool, desc)
        if name & _REF_WORDS:
            refs = pool.get("branch") + pool.get("sha") + pool.get("branch_name") + ["HEAD"]
            return [rng.choice(refs[:6])]
        if creates(tool) and name & _NAME_WORDS and names_created(tool, name):
            return [self._fresh_name(prop)]
        if name & _TEXT_WORDS:
            return [f"{rng.choice(('Note', 'Check', 'Update'))}: {' '.join(rng.sample(NOUNS, 4))}"]
        if quoted and ("whether" in desc.lower() or "one of" in desc.lower() or "e.g." in desc):
            return [rng.choice(quoted)]
        if name & {"url", "uri", "link", "endpoint"}:
            return (pool.get("url") + pool.get("uri"))[:3] or ["https://example.com/"]
        return []

    def _paths(self, prop: str, name: set[str], types: set[str], pool: ValuePool,
               desc: str = "") -> list[Any]:
        """A path for ``prop``: the root for a repository, root or folder; a file under a
        root for a file (its name says ``file``, or its description does and names no folder:
        ``path``, "Path to the text file"), never one of the folders seen."""
        rng = self.rng
        exact = [v for v in pool.matching(prop) if isinstance(v, str)]
        roots = [r for r in pool.roots if r in exact] or pool.roots
        if "array" in types or prop.endswith("s"):
            files = pool.get("file") or [p.rsplit("/", 1)[-1] for p in pool.get("path")]
            return [rng.sample(files, min(len(files), rng.randint(1, 2)))] if files else []
        said = set(words(desc))
        a_file = name & {"file", "filename", "filepath"} or (
            "file" in said and not said & {"directory", "folder", "dir", "repository"})
        if name & {"repo", "repository", "root", "dir", "directory", "folder"} or not a_file:
            return ([rng.choice(roots)] if roots else []) + exact[:2]
        folders = set(pool.get("directory"))
        files = [p for p in pool.get("path") if any(p.startswith(r + "/") for r in pool.roots)
                 and p.rsplit("/", 1)[-1] not in folders]
        return [rng.choice(files)] if files else exact[:2]

    def _new_file(self, tool: dict[str, Any], pool: ValuePool) -> str:
        """A file not yet there, in the first root folder, for a tool to write (a backup, an
        export): ``ROOT/maple_7131.csv``, its suffix a format the tool's name or
        description names (``.txt`` when none)."""
        root = next((r for r in pool.roots if not Path(r).suffix), pool.roots[0])
        said = set(words(f"{tool.get('name', '')} {tool.get('description', '')}"))
        suffix = next((s for s in _SUFFIXES if s in said), "txt")
        return f"{root.rstrip('/')}/{self._fresh_name('file')}.{_SUFFIXES.get(suffix, suffix)}"

    def _word(self, prop: str) -> str:
        return f"{self.rng.choice(NOUNS)}-{self.rng.randint(1, 99)}"

    def _fresh_name(self, prop: str) -> str:
        self._fresh += 1
        return f"{self.rng.choice(NOUNS)}_{self.rng.randint(1, 999)}{self._fresh}"


def sql_statement(kind: str, pool: ValuePool, rng: random.Random, fresh: Any) -> str | None:
    """An SQL statement of ``kind`` (``select``/``write``/``create``/``any``) over the tables
    in ``pool`` (a fresh table for ``create``; a select of ``sqlite_master`` when no table is
    known); ``None`` for a write without a table whose columns are known."""
    tables = [t for t in pool.tables if pool.tables[t]] or list(pool.tables)
    if kind == "create" or (kind == "any" and not tables):
        return (f"CREATE TABLE IF NOT EXISTS {fresh('table')} (id INTEGER PRIMARY KEY, "
                "name TEXT, city TEXT, amount REAL)")
    if not tables:
        return None if kind == "write" else \
            "SELECT name AS table_name FROM sqlite_master WHERE type = 'table'"
    table = rng.choice(tables)
    columns = [c for c in pool.tables[table] if c != "id"]
    if kind == "write" and not columns:
        return None
    if kind == "select" or (kind == "any" and rng.random() < 0.5) or not columns:
        if columns and rng.random() < 0.4:
            return f"SELECT {columns[0]}, COUNT(*) AS n FROM {table} GROUP BY {columns[0]}"
        return f"SELECT * FROM {table} LIMIT {rng.randint(1, 10)}"
    roll = rng.random()
    if roll < 0.6:
        values = ", ".join(_sql_literal(c, rng) for c in columns)
        return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({values})"
    if roll < 0.85:
        return f"UPDATE {table} SET {columns[-1]} = {_sql_literal(columns[-1], rng)} WHERE id = 1"
    return f"DELETE FROM {table} WHERE id = {rng.randint(1, 3)}"


def _sql_literal(column: str, rng: random.Random) -> str:
    col = column.lower()
    if any(w in col for w in ("amount", "price", "total", "count", "qty", "age", "id", "score")):
        return str(rng.randint(1, 300))
    if "city" in col:
        return f"'{rng.choice(CITIES)}'"
    return f"'{rng.choice(PEOPLE)}'"
