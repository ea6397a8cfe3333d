"""Which terminal command lines have output that is a function of the episode so far: the
domain's ``is_deterministic`` hook, which fidelity reports split exact match on."""

from __future__ import annotations

import pytest

from agentworld.core.domain_base import domain_hooks
from agentworld.core.types import Action, Observation
from agentworld.domains.terminal.domain import TerminalDomain


@pytest.mark.parametrize("command", [
    "ls", "ls -a", "ls -1 d", "pwd", "cd /tmp && cat y", "echo a && echo b", "cat f | wc -l",
    "ls 2>&1", "grep -r x . >&2", "for f in *; do echo $f; done", "x=3; echo $((x + 1))",
    "sort a &>/dev/null",
])
def test_deterministic(command: str) -> None:
    assert domain_hooks(TerminalDomain()).is_deterministic(Action(text=command)) is True


@pytest.mark.parametrize("command", [
    "date", "date +%s", "ps aux", "uptime", "x=$(mktemp)", "echo $RANDOM", "echo ${RANDOM}",
    "echo $$", "ls -la", "ls -lt d", "for f in *; do ls -l $f; done", "stat f", "sleep 1 &",
    "head -c 4 /dev/urandom | od", "shuf -n 1 f", "openssl rand -hex 4",
    "python3 -c 'import random; print(random.random())'", "df -h", "free -m", "time ls",
])
def test_nondeterministic(command: str) -> None:
    assert domain_hooks(TerminalDomain()).is_deterministic(Action(text=command)) is False


def test_a_listing_of_set_up_files_is_deterministic() -> None:
    """The sandbox dates set-up files 1 January 2024: their listing shows no time of day; a file
    the episode wrote shows one, as does ``stat``'s change time."""
    hooks = domain_hooks(TerminalDomain())
    prompt = "user@sandbox:~$ "
    pinned = f"total 4\n-rw-r--r-- 1 user user 34 Jan  1  2024 notes.txt\n{prompt}"
    fresh = f"total 4\n-rw-r--r-- 1 user user 34 Dec  7 03:49 notes.txt\n{prompt}"
    assert hooks.is_deterministic(Action(text="ls -l"), Observation(text=pinned)) is True
    assert hooks.is_deterministic(Action(text="ls -la d"), Observation(text=fresh)) is False
    assert hooks.is_deterministic(Action(text="stat -c %Y etc"),
                                  Observation(text=f"1704067200\n{prompt}")) is True
    changed = f"Modify: 2024-01-01 00:00:00.000000000 +0000\nChange: 2026-12-07 03:49:07\n{prompt}"
    assert hooks.is_deterministic(Action(text="stat f"), Observation(text=changed)) is False
    # the clock itself is never deterministic, whatever it printed
    assert hooks.is_deterministic(Action(text="date"), Observation(text=f"x\n{prompt}")) is False
