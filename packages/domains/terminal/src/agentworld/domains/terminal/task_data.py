"""Validation of a terminal task's ``setup`` and ``check`` data, before an episode starts.

The formats are those of :mod:`agentworld.domains.terminal.fs`. A task may come from a client
of ``serve --real`` or from a file, so :class:`~agentworld.domains.terminal.env.TerminalEnv`
validates it at ``reset`` and refuses bad data with a ``ValueError`` naming the field at fault
and what would be valid, before any directory is made; nothing fails later, mid-episode.
Unknown keys are left alone (``check["goal"]`` is read by scripted policies only).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from agentworld.domains.terminal.regexes import compile_pattern

MAX_ENTRIES = 1_000  # set-up directories and files at most
MAX_SETUP_BYTES = 16 << 20  # UTF-8 bytes of all set-up files together
MAX_PATH_BYTES = 1_024  # of one relative path (a component: 255, as on ext4)
_WANTS = {"equals": str, "contains": list, "lacks": list}


def _fail(field: str, problem: str) -> ValueError:
    return ValueError(f"{field}: {problem}")


def path_parts(rel: Any, field: str) -> tuple[str, ...]:
    """The components of ``rel``, a path relative to the home directory.

    Raises:
        ValueError: ``rel`` is not a string, is empty, absolute, has a ``..`` component or a NUL
            byte, or is too long (message names ``field``).
    """
    valid = "a relative path inside the home directory such as 'docs/todo.txt'"
    if not isinstance(rel, str):
        raise _fail(field, f"expected {valid}, got {type(rel).__name__} {rel!r}")
    pure = PurePosixPath(rel)
    parts = pure.parts
    if not parts or pure.is_absolute() or ".." in parts or "\0" in rel or parts == (".",):
        raise _fail(field, f"expected {valid} (no '..', not absolute, not empty), got {rel!r}")
    if len(rel.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES or any(
        len(p.encode("utf-8", "surrogatepass")) > 255 for p in parts
    ):
        raise _fail(field, f"path too long (at most {MAX_PATH_BYTES} bytes, 255 per name): {rel!r}")
    return parts


def _str_list(value: Any, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(field, f"expected a list of strings, got {value!r:.80}")
    return value


def _paths(value: Any, field: str) -> list[tuple[str, ...]]:
    if not isinstance(value, list):
        raise _fail(field, f"expected a list of relative paths, got {value!r:.80}")
    return [path_parts(rel, f"{field}[{i}]") for i, rel in enumerate(value)]


def validate_setup(setup: Any, field: str = "task.setup") -> None:
    """Check set-up data ``{"dirs": [path], "files": {path: text}}``.

    Raises:
        ValueError: not an object; ``dirs`` not a list of relative paths; ``files`` not an
            object of relative paths to strings; a path both a file and a directory (or a file
            with entries under it); more than :data:`MAX_ENTRIES` entries or
            :data:`MAX_SETUP_BYTES` of text.
    """
    if not isinstance(setup, dict):
        valid = "an object {'dirs': [...], 'files': {...}}"
        raise _fail(field, f"expected {valid}, got {setup!r:.80}")
    dirs = _paths(setup.get("dirs", []), f"{field}['dirs']")
    files = setup.get("files", {})
    if not isinstance(files, dict):
        raise _fail(f"{field}['files']", f"expected an object {{path: text}}, got {files!r:.60}")
    size = 0
    for rel, text in files.items():
        path_parts(rel, f"{field}['files'] key")
        if not isinstance(text, str):
            where = f"{field}['files'][{rel!r}]"
            raise _fail(where, f"expected the file's text, got {text!r:.80}")
        size += len(text.encode("utf-8", "surrogatepass"))
    if len(dirs) + len(files) > MAX_ENTRIES or size > MAX_SETUP_BYTES:
        limit = f"at most {MAX_ENTRIES} entries and {MAX_SETUP_BYTES} bytes"
        raise _fail(field, f"too large: {limit}")
    file_parts = {PurePosixPath(rel).parts: rel for rel in files}
    for parts in [*dirs, *file_parts]:
        for i in range(1, len(parts)):
            if parts[:i] in file_parts:
                raise _fail(
                    field,
                    f"{file_parts[parts[:i]]!r} is a file but {'/'.join(parts)!r} is under it",
                )
    for parts in dirs:
        if parts in file_parts:
            raise _fail(field, f"{file_parts[parts]!r} is listed both as a directory and a file")


def validate_check(check: Any, field: str = "task.check") -> None:
    """Check success-check data (keys of :mod:`agentworld.domains.terminal.fs`).

    Raises:
        ValueError: not an object; ``dirs``/``exists``/``absent`` not lists of relative paths;
            ``files`` not ``{path: {"equals": text, "contains": [text], "lacks": [text]}}``;
            ``cwd`` not an absolute path; ``output_contains`` not a list of strings;
            ``output_regex`` not a regular expression RE2 compiles
            (:mod:`agentworld.domains.terminal.regexes`).
    """
    if not isinstance(check, dict):
        raise _fail(field, f"expected an object of conditions, got {check!r:.80}")
    for key in ("dirs", "exists", "absent"):
        if key in check:
            _paths(check[key], f"{field}[{key!r}]")
    files = check.get("files", {})
    if not isinstance(files, dict):
        raise _fail(f"{field}['files']", f"expected {{path: conditions}}, got {files!r:.60}")
    for rel, want in files.items():
        where = f"{field}['files'][{rel!r}]"
        path_parts(rel, f"{field}['files'] key")
        if not isinstance(want, dict) or set(want) - set(_WANTS):
            valid = f"an object with keys among {sorted(_WANTS)}"
            raise _fail(where, f"expected {valid}, got {want!r:.80}")
        if "equals" in want and not isinstance(want["equals"], str):
            got = want["equals"]
            raise _fail(f"{where}['equals']", f"expected the file's text, got {got!r:.80}")
        for key in ("contains", "lacks"):
            if key in want:
                _str_list(want[key], f"{where}[{key!r}]")
    cwd = check.get("cwd", "/")
    if not (isinstance(cwd, str) and cwd.startswith("/")):
        raise _fail(f"{field}['cwd']", f"expected an absolute directory path, got {cwd!r:.80}")
    if "output_contains" in check:
        _str_list(check["output_contains"], f"{field}['output_contains']")
    if "output_regex" in check:
        compile_pattern(check["output_regex"], f"{field}['output_regex']")  # RE2: linear time


def validate_task(setup: Any, check: Any) -> None:
    """:func:`validate_setup` and :func:`validate_check` of one task (fields ``task.setup``,
    ``task.check``). Raises ``ValueError`` as they do."""
    validate_setup(setup)
    validate_check(check)
