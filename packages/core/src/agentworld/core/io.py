"""Trajectory datasets through fsspec URLs (local paths, ``memory://``, ``s3://``, ...).

Writes are atomic: records go to a temporary sibling file which is renamed
over the target only after the last record is written, so a failure never
leaves a half-written dataset behind; strings that cannot be UTF-8 encoded (lone
surrogates, e.g. an undecodable file name) are written as visible escapes
(:mod:`agentworld.core.escapes`). Reads validate every line and report the file and
1-based line number of the first bad one; a line longer than :data:`MAX_LINE_BYTES` is
refused after reading at most that much of it, so memory stays bounded whatever the file
(a small ``.gz`` may hold a line of gigabytes).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import fsspec
from fsspec.implementations.local import LocalFileSystem
from pydantic import BaseModel, ValidationError

from agentworld.core.escapes import json_line
from agentworld.core.types import Episode

M = TypeVar("M", bound=BaseModel)

MAX_LINE_BYTES = 64 << 20
"""Longest JSONL line read, bytes (64 MiB): the largest episodes are a few MiB."""
_CHUNK_BYTES = 1 << 20


class DatasetError(ValueError):
    """A dataset line (or, with ``line=None``, a whole file) that cannot be read: not valid
    JSON, too long, nested too deeply, not matching the schema, or a damaged container."""

    def __init__(self, url: str, line: int | None, reason: str):
        self.url, self.line = url, line
        super().__init__(f"{url}: {reason}" if line is None else f"{url}, line {line}: {reason}")


def _parent_dirs(fs: fsspec.AbstractFileSystem, path: str) -> None:
    parent = path.rsplit("/", 1)[0] if "/" in path else ""
    if parent:
        fs.makedirs(parent, exist_ok=True)


@contextmanager
def atomic_open(url: str, mode: str = "w") -> Iterator[Any]:
    """Open a temporary sibling of ``url`` for writing; rename it over ``url`` on success.

    On any exception the temporary file is removed and ``url`` is left as it
    was. Parent directories are created. Text modes use UTF-8.

    Raises:
        IsADirectoryError: ``url`` is an existing directory.
    """
    fs, path = fsspec.core.url_to_fs(url)
    if fs.isdir(path):  # fs.mv would move the temporary file into it, under its temporary name
        raise IsADirectoryError(f"{url} is a directory; give a file path (e.g. {url.rstrip('/')}/episodes.jsonl)")
    _parent_dirs(fs, path)
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        with fs.open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            yield f
        fs.mv(tmp, path)
    except BaseException:
        if fs.exists(tmp):
            fs.rm(tmp)
        raise


def atomic_write(url: str, data: str | bytes) -> str:
    """Write ``data`` (text as UTF-8, or bytes) to ``url`` atomically. Returns ``url``."""
    with atomic_open(url, "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
    return url


class OutputError(ValueError):
    """An output location that cannot take a new data set (a directory, a file in the way,
    an existing data set not to be replaced, or no permission to write)."""


def check_output(url: str, *, overwrite: bool = False) -> None:
    """Check, before any work, that a data set can be written to ``url``.

    Local paths are checked fully: not a directory, no file where a parent directory must
    be, no existing file unless ``overwrite``, and the (created) parent directory accepts
    a new file. Other fsspec URLs are checked for being a directory and for existing.

    Raises:
        OutputError: naming ``url`` and what to do instead.
    """
    fs, path = fsspec.core.url_to_fs(url)
    if fs.isdir(path):
        raise OutputError(f"{url} is a directory; give a file path (e.g. {url.rstrip('/')}/episodes.jsonl)")
    if fs.exists(path) and not overwrite:
        raise OutputError(f"{url} exists; pass --overwrite to replace it, or choose another path")
    if not isinstance(fs, LocalFileSystem):
        return
    target = Path(path)
    for parent in target.parents:
        if parent.exists() and not parent.is_dir():
            raise OutputError(f"cannot write {url}: {parent} is a file, not a directory")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        probe = target.parent / f".{target.name}.probe-{uuid.uuid4().hex[:8]}"
        probe.touch(exist_ok=False)
        probe.unlink()
    except OSError as e:
        raise OutputError(f"cannot write {url}: {e.strerror or e}") from None


def same_file(a: str, b: str) -> bool:
    """True when URLs ``a`` and ``b`` name the same file (local paths resolved, links followed)."""
    fs_a, path_a = fsspec.core.url_to_fs(a)
    fs_b, path_b = fsspec.core.url_to_fs(b)
    if isinstance(fs_a, LocalFileSystem) and isinstance(fs_b, LocalFileSystem):
        return Path(path_a).resolve() == Path(path_b).resolve()
    return type(fs_a) is type(fs_b) and path_a == path_b


def write_jsonl(url: str, records: Iterable[BaseModel | dict[str, Any]]) -> int:
    """Atomically write records, one JSON object per line.

    Args:
        url: Target fsspec URL; parent directories are created.
        records: Pydantic models or plain dicts.

    Returns:
        Number of records written.
    """
    count = 0
    with atomic_open(url, "wb") as f:
        for record in records:
            data = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
            f.write(json_line(data))
            count += 1
    return count


def read_lines(
    f: Any, url: str, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[tuple[int, bytes]]:
    """``(line_number, line)`` for each line of the binary file ``f`` (read from ``url``), 1-based,
    split on ``b"\\n"`` only, without it. ``f`` is read in 1 MiB chunks: at most
    ``max_line_bytes`` + 1 MiB of it is held at once.

    Raises:
        DatasetError: a line longer than ``max_line_bytes`` bytes (naming ``url``, the line and
            the limit), raised as soon as that many bytes of it are read.
    """

    def too_long(number: int) -> DatasetError:
        return DatasetError(url, number, f"longer than {max_line_bytes} bytes, the limit of a "
                            "line (max_line_bytes); split the record or raise the limit")

    number, pending = 0, bytearray()
    while chunk := f.read(_CHUNK_BYTES):
        *lines, rest = chunk.split(b"\n")
        for line in lines:
            number += 1
            if len(pending) + len(line) > max_line_bytes:
                raise too_long(number)
            if pending:
                pending += line
                line, pending = bytes(pending), bytearray()
            yield number, line
        if len(pending) + len(rest) > max_line_bytes:
            raise too_long(number + 1)
        pending += rest
    if pending:
        yield number + 1, bytes(pending)


def parse_object(url: str, number: int, raw: bytes) -> dict[str, Any] | None:
    """Line ``number`` of ``url`` as a JSON object; ``None`` for a blank line.

    Raises:
        DatasetError: the line is not UTF-8, not JSON, nested deeper than the JSON parser
            goes (Python's recursion limit, about 1,000 levels), or not an object.
    """
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DatasetError(url, number, f"not UTF-8 (byte 0x{raw[e.start]:02x} at byte "
                                        f"{e.start + 1} of the line)") from None
    if not line.strip():
        return None
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        raise DatasetError(url, number, f"invalid JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:
        raise DatasetError(url, number, "JSON nested too deeply to read (over about "
                           f"{sys.getrecursionlimit()} levels of arrays or objects)") from None
    if not isinstance(data, dict):
        raise DatasetError(url, number, f"expected a JSON object, got {type(data).__name__}")
    return data


def iter_jsonl(url: str, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL file (compressed
    when its name ends in ``.gz``, ``.bz2``, ``.xz``, ``.zst``: fsspec infers it).

    Args:
        max_line_bytes: Longest line read, bytes (:func:`read_lines`).

    Raises:
        DatasetError: a line is too long, not UTF-8, not JSON, nested too deeply or not a
            JSON object (:func:`parse_object`), or the compressed stream is damaged.
        FileNotFoundError: ``url`` does not exist.
    """
    with fsspec.open(url, "rb", compression="infer") as f:
        lines = read_lines(f, url, max_line_bytes)
        while True:
            try:
                number, raw = next(lines)
            except StopIteration:
                return
            except (EOFError, OSError) as e:  # a truncated or damaged compressed stream
                raise DatasetError(url, None, f"cannot be read ({type(e).__name__}: {e})") from None
            data = parse_object(url, number, raw)
            if data is not None:
                yield number, data


def read_models(url: str, model: type[M]) -> list[M]:
    """Read and validate every line of ``url`` as ``model``.

    Raises:
        DatasetError: naming the file and line of the first invalid record.
    """
    return validate_rows(url, iter_jsonl(url), model)


def validate_rows(url: str, rows: Iterable[tuple[int, dict[str, Any]]], model: type[M]) -> list[M]:
    """Validate ``(row number, row)`` pairs read from ``url`` as ``model``.

    Raises:
        DatasetError: naming ``url``, the row number and the field of the first invalid row.
    """
    out = []
    for number, data in rows:
        try:
            out.append(model.model_validate(data))
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "record"
            raise DatasetError(url, number, f"{model.__name__} field {where}: {first['msg']}") from None
    return out


def write_episodes(url: str, episodes: Iterable[Episode]) -> int:
    """Atomically write episodes as JSONL. Returns the number written."""
    return write_jsonl(url, episodes)


def read_episodes(url: str) -> list[Episode]:
    """Read episodes from JSONL.

    Raises:
        DatasetError: naming the file and line of the first invalid episode.
    """
    return read_models(url, Episode)
