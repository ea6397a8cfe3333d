"""Which terminal command lines have output that is a function of the episode so far: the
domain's ``is_deterministic`` hook, which fidelity reports split exact match on."""

from __future__ import annotations

import pytest

from agentworld.core.domain_base import domain_hooks
from agentworld.core.types import Action
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
