"""Text that always encodes as UTF-8: lone surrogates (undecodable bytes) made visible escapes.

Python represents a file name that is not valid UTF-8 with lone surrogates (PEP 383's
``surrogateescape``: byte ``0xff`` becomes ``"\\udcff"``), and ``json.loads`` accepts a
``"\\udcff"`` escape from any server. Such text cannot be encoded as UTF-8, so one odd
name (``touch $'\\xff'`` in a terminal episode) would make every JSON line that holds it
fail to write. Here such characters become a visible escape: an undecodable byte ``0xNN``
is written ``\\xNN`` (as ``ls -b`` shows it), any other lone surrogate ``\\udNNN``
(Python's ``backslashreplace``). Text without lone surrogates is returned unchanged.
"""

from __future__ import annotations

import json
from typing import Any


def visible(text: str) -> str:
    """``text`` with each lone surrogate replaced by a visible backslash escape (module
    docstring): ``"a\\udcffb"`` -> ``"a\\\\xffb"``; other text unchanged (same object)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:  # surrogate-escaped bytes back to bytes, then shown as \xNN
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that is no escaped byte (e.g. from a JSON "\ud800")
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def visible_strings(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, tuples, strings, numbers) with :func:`visible`
    applied to every string, dictionary keys included; other values are kept."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible_strings(k): visible_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [visible_strings(v) for v in value]
    return value


def json_line(data: Any) -> bytes:
    """``data`` as one line of JSON, UTF-8 encoded (non-ASCII kept raw), ending in ``b"\\n"``;
    strings with lone surrogates are written as :func:`visible` escapes, so it never fails
    on them.

    Raises:
        TypeError: ``data`` holds a value JSON cannot represent.
    """
    try:
        return (json.dumps(data, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(visible_strings(data), ensure_ascii=False) + "\n").encode("utf-8")
