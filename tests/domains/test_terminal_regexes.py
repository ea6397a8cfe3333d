"""A task's ``output_regex`` is data that runs on the host against text the agent controls:
RE2 matches it in time linear in the text (``^(a+)+$`` took 16.6 s with ``re`` on a short
input), and a pattern RE2 cannot run (backreferences, lookaround) is refused naming the field."""

from __future__ import annotations

import time

import pytest
from agentworld.core.types import Task
from agentworld.domains.terminal.domain import TerminalDomain
from agentworld.domains.terminal.fs import output_holds
from agentworld.domains.terminal.regexes import MAX_PATTERN_CHARS, search
from agentworld.domains.terminal.task_data import validate_check
from agentworld.domains.tty.domain import TtyDomain

EVIL = "^(a+)+$"


@pytest.mark.parametrize("n", [30, 100_000])
def test_nested_repetition_on_a_long_near_miss_is_fast(n: int) -> None:
    text = "a" * n + "b"
    started = time.perf_counter()
    assert output_holds({"output_regex": EVIL}, text, "/") is False
    assert TerminalDomain().verify(text + "\n", Task(id="x", domain="terminal", instruction="-",
                                                     check={"output_regex": EVIL})) == (0.0, False)
    assert TtyDomain().verify(text, Task(id="y", domain="tty", instruction="-",
                                         check={"output_regex": EVIL})) == (0.0, False)
    assert time.perf_counter() - started < 1.0
    assert output_holds({"output_regex": EVIL}, "a" * n, "/") is True


def test_the_patterns_our_tasks_write_still_match() -> None:
    assert search(r"(?m)^\s*3$", "wc -l\n   3\n")
    assert search(r"(?s)^a\.txt\r?\nb\.txt\r?\n$", "a.txt\r\nb.txt\r\n")
    assert search(r"(?m)^\s*3\b", "  3 files")
    assert not search(r"(?m)^42$", "420\n")
    assert search("caf\u00e9", "un caf\u00e9 noir")  # text is Unicode, not bytes


@pytest.mark.parametrize(("pattern", "reason"), [
    (r"(a)\1", "invalid escape sequence: \\1"),
    ("(?<=a)b", "invalid perl operator: (?<"),
    ("(?!x)y", "invalid perl operator: (?!"),
    ("x" * (MAX_PATTERN_CHARS + 1), f"a pattern of {MAX_PATTERN_CHARS + 1} characters"),
    (5, "expected a regular expression string, got 5"),
])
def test_patterns_re2_cannot_run_are_refused_naming_the_field(pattern, reason) -> None:
    with pytest.raises(ValueError, match=r"^task\.check\['output_regex'\]: ") as info:
        validate_check({"output_regex": pattern})
    assert reason in str(info.value) and "\n" not in str(info.value)
    check = {"output_regex": pattern}
    task = Task(id="x", domain="terminal", instruction="-", check=check)
    assert TerminalDomain().verify("out\n", task) is None  # cannot tell, never raises
