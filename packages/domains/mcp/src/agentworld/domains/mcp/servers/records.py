"""``records``: a SQLite-backed records store (tables of rows: create, insert, query, update,
delete, aggregate).

State: ``DATA/records.sqlite3``; every table has an ``id INTEGER PRIMARY KEY`` and the columns
it was created with (SQLite's dynamic typing keeps numbers as numbers).
Run: ``python -m agentworld.domains.mcp.servers.records --data DIR``.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

FILE = "records.sqlite3"
NAME = re.compile(r"^[a-z_][a-z0-9_]{0,31}$")
OPS = {"count": "COUNT", "sum": "SUM", "avg": "AVG", "min": "MIN", "max": "MAX"}
Scalar = str | int | float | bool | None


def _name(kind: str, value: str) -> str:
    if not NAME.match(value):
        raise ValueError(f"invalid {kind} name {value!r}: use 1-32 of a-z, 0-9, _ "
                         "(not starting with a digit)")
    return value


class RecordsStore:
    """The tables of one data directory. Errors are ``ValueError`` with a one-line message."""

    def __init__(self, data: Path):
        self.path = Path(data) / FILE

    def _db(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None)
        db.row_factory = sqlite3.Row
        return db

    def _columns(self, db: sqlite3.Connection, table: str) -> list[str]:
        _name("table", table)
        cols = [r["name"] for r in db.execute(f"PRAGMA table_info({table})")]
        if not cols:
            raise ValueError(f"no table {table!r}; existing tables: "
                             f"{', '.join(self._tables(db)) or 'none'}")
        return cols

    def _tables(self, db: sqlite3.Connection) -> list[str]:
        return [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]

    def _where(self, cols: list[str], where: dict[str, Scalar] | None) -> tuple[str, list[Any]]:
        if not where:
            return "", []
        for key in where:
            if key not in cols:
                raise ValueError(f"unknown column {key!r} in where; columns: {', '.join(cols)}")
        return " WHERE " + " AND ".join(f"{k} IS ?" for k in where), list(where.values())

    def list_tables(self) -> dict[str, Any]:
        """Every table with its columns and row count."""
        with self._db() as db:
            return {"tables": [{"table": t, "columns": self._columns(db, t),
                                "rows": db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]}
                               for t in self._tables(db)]}

    def create_table(self, table: str, columns: list[str]) -> dict[str, Any]:
        """Create a table with these columns (an id column is added)."""
        cols = [_name("column", c) for c in columns]
        if not cols or len(set(cols)) != len(cols) or "id" in cols:
            raise ValueError("columns must be a non-empty list of distinct names other than 'id'")
        with self._db() as db:
            if _name("table", table) in self._tables(db):
                raise ValueError(f"table {table!r} already exists")
            db.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, {', '.join(cols)})")
        return {"created": table, "columns": ["id", *cols]}

    def insert_row(self, table: str, row: dict[str, Scalar]) -> dict[str, Any]:
        """Insert one row (a column -> value object); returns it with its new id."""
        with self._db() as db:
            cols = self._columns(db, table)
            bad = [k for k in row if k not in cols or k == "id"]
            if bad or not row:
                raise ValueError(f"row must map some of the columns {', '.join(cols[1:])} "
                                 f"to values; bad keys: {', '.join(bad) or 'none given'}")
            cur = db.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES "
                             f"({', '.join('?' * len(row))})", list(row.values()))
            return {"inserted": {"id": cur.lastrowid, **row}}

    def query_rows(
        self, table: str, where: dict[str, Scalar] | None = None, limit: int = 50
    ) -> dict[str, Any]:
        """Rows whose columns equal every value of where, ordered by id, at most limit rows."""
        with self._db() as db:
            clause, args = self._where(self._columns(db, table), where)
            rows = db.execute(f"SELECT * FROM {table}{clause} ORDER BY id LIMIT ?",
                              [*args, max(0, limit)]).fetchall()
            return {"table": table, "count": len(rows), "rows": [dict(r) for r in rows]}

    def update_rows(
        self, table: str, where: dict[str, Scalar], values: dict[str, Scalar]
    ) -> dict[str, Any]:
        """Set values on the rows matching where (which must not be empty)."""
        with self._db() as db:
            cols = self._columns(db, table)
            if not where:
                raise ValueError("where must name at least one column (refusing to update all rows)")
            bad = [k for k in values if k not in cols or k == "id"]
            if bad or not values:
                raise ValueError(f"values must set some of {', '.join(cols[1:])}; "
                                 f"bad keys: {', '.join(bad) or 'none given'}")
            clause, args = self._where(cols, where)
            cur = db.execute(f"UPDATE {table} SET {', '.join(f'{k} = ?' for k in values)}{clause}",
                             [*values.values(), *args])
            return {"table": table, "updated": cur.rowcount}

    def delete_rows(self, table: str, where: dict[str, Scalar]) -> dict[str, Any]:
        """Delete the rows matching where (which must not be empty)."""
        with self._db() as db:
            cols = self._columns(db, table)
            if not where:
                raise ValueError("where must name at least one column (refusing to delete all rows)")
            clause, args = self._where(cols, where)
            cur = db.execute(f"DELETE FROM {table}{clause}", args)
            return {"table": table, "deleted": cur.rowcount}

    def aggregate(
        self, table: str, column: str, op: str, where: dict[str, Scalar] | None = None
    ) -> dict[str, Any]:
        """op (count, sum, avg, min, max) of a column over the rows matching where."""
        if op not in OPS:
            raise ValueError(f"unknown op {op!r}; valid: {', '.join(OPS)}")
        with self._db() as db:
            cols = self._columns(db, table)
            if column not in cols:
                raise ValueError(f"unknown column {column!r}; columns: {', '.join(cols)}")
            clause, args = self._where(cols, where)
            value = db.execute(f"SELECT {OPS[op]}({column}) FROM {table}{clause}", args).fetchone()[0]
            if isinstance(value, float):
                value = round(value, 6)
            return {"table": table, "column": column, "op": op, "value": value}

    def dump(self) -> dict[str, Any]:
        """The whole state: ``{"tables": {table: [row, ...]}}`` (rows by ``id``)."""
        if not self.path.exists():
            return {"tables": {}}
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        db.row_factory = sqlite3.Row
        try:
            return {"tables": {t: [dict(r) for r in db.execute(f"SELECT * FROM {t} ORDER BY id")]
                               for t in self._tables(db)}}
        finally:
            db.close()


def main() -> None:
    from agentworld.domains.mcp.servers.sdk import data_dir, serve

    store = RecordsStore(data_dir("records"))
    serve("records", [store.list_tables, store.create_table, store.insert_row, store.query_rows,
                      store.update_rows, store.delete_rows, store.aggregate])


if __name__ == "__main__":
    main()
