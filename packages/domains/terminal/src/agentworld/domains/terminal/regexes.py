"""Regular expressions that data gives (a task's ``check["output_regex"]``), run in linear time.

A task is data, and its pattern runs on the host against text the agent controls: with Python's
backtracking ``re``, ``^(a+)+$`` on 30 ``a`` and a ``b`` takes minutes. Patterns here are
compiled by RE2 (``google-re2``), whose matching time is linear in the text whatever the
pattern. RE2's syntax is Python's without backreferences and lookaround (refused, naming the
field); ``$`` without ``(?m)`` matches only at the very end of the text (Python's also matches
before a final newline), and ``(?m)^line$`` matches line ends as in Python.
"""

from __future__ import annotations

import functools

import re2

MAX_PATTERN_CHARS = 4096
"""Longest pattern accepted, characters."""
MAX_PROGRAM_BYTES = 8 << 20
"""Memory RE2 may use for one compiled pattern, bytes (its default); a larger one is refused."""


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str, field: str = "output_regex") -> re2._Regexp:
    """``pattern`` compiled by RE2 (matching in linear time), cached.

    Raises:
        ValueError: ``pattern`` is not a string, is longer than :data:`MAX_PATTERN_CHARS`, or
            RE2 cannot compile it (a backreference, lookaround, a repetition over 1000, a
            program over :data:`MAX_PROGRAM_BYTES`); the message names ``field``.
    """
    if not isinstance(pattern, str):
        raise ValueError(f"{field}: expected a regular expression string, got {pattern!r:.80}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"{field}: a pattern of {len(pattern)} characters; at most "
                         f"{MAX_PATTERN_CHARS}")
    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_PROGRAM_BYTES
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(
            exc.args[0], bytes) else str(exc)
        raise ValueError(f"{field}: {pattern!r:.80} is not a regular expression RE2 runs in "
                         f"linear time ({reason}); backreferences and lookaround are not "
                         "supported") from None


def search(pattern: str, text: str, field: str = "output_regex") -> bool:
    """Whether ``pattern`` (:func:`compile_pattern`) matches somewhere in ``text``; time linear
    in ``len(text)``.

    Raises:
        ValueError: as :func:`compile_pattern`.
    """
    return compile_pattern(pattern, field).search(text) is not None
