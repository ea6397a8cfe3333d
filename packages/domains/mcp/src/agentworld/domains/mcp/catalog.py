"""Our servers by name: their command lines and their state dumps; the command lines the
operator configured.

Data is not configuration: a server named by a task, a recorded state or any other file is
started only when it is one of ours (:data:`~agentworld.domains.mcp.servers.SERVERS`) or a
command line the operator of this process gave (``McpEnv(server="CMD ARGS")``, ``agentworld
collect --set server=...``), which :func:`trust` records. :func:`command` refuses any other.
"""

from __future__ import annotations

import shlex
import sys
import threading
from pathlib import Path
from typing import Any

from agentworld.domains.mcp.command_line import split_command
from agentworld.domains.mcp.servers import SERVERS
from agentworld.domains.mcp.servers.notes import NotesStore
from agentworld.domains.mcp.servers.records import RecordsStore
from agentworld.domains.mcp.servers.todo import TodoStore

_STORES = {"notes": NotesStore, "records": RecordsStore, "todo": TodoStore}
_TRUSTED: set[str] = set()
_TRUSTED_LOCK = threading.Lock()


class UntrustedServerError(ValueError):
    """A server command line that is neither one of ours nor configured by the operator (it
    came from data: a task's ``setup["server"]``, a recorded state, a file)."""


def trust(server: str) -> None:
    """Record ``server``, a command line the operator configured in this process
    (``McpEnv(server=...)``), as one :func:`command` may start. Ours need no record."""
    if server not in SERVERS:
        with _TRUSTED_LOCK:
            _TRUSTED.add(server)


def runnable(server: str) -> bool:
    """Whether :func:`command` starts ``server``: one of ours or a :func:`trust`-ed one."""
    return server in SERVERS or server in _TRUSTED


def command(server: str, data: Path) -> list[str]:
    """The argv of a server: one of ours by name (run with this interpreter, state in
    ``data``), else a command line the operator configured (:func:`trust`), split as a shell
    command line (a third-party stdio server).

    Raises:
        ValueError: ``server`` is empty.
        UntrustedServerError: ``server`` is neither ours nor configured by the operator.
    """
    if server in SERVERS:
        return [sys.executable, "-m", f"agentworld.domains.mcp.servers.{server}",
                "--data", str(data)]
    if not server.strip():
        raise ValueError(f"server must name one of ours ({', '.join(SERVERS)}) or be a command "
                         "line such as 'uvx mcp-server-time', got an empty string")
    if server not in _TRUSTED:
        raise UntrustedServerError(
            f"mcp server {server!r:.200} is not started: it is neither one of ours "
            f"({', '.join(SERVERS)}) nor a command line the operator configured "
            "(McpEnv(server=...), agentworld collect --set server=...); a server named by data "
            "(a task, a recorded state, a file) never runs")
    return shlex.split(server)


def dump(server: str, data: Path) -> dict[str, Any] | None:
    """The state of one of our servers read from its data directory, ``None`` for another."""
    store = _STORES.get(server)
    return store(data).dump() if store is not None else None


def label(server: str) -> str:
    """How listings name a server: ours by name, another by its program's file name
    (``/venv/bin/mcp-server-time --local-timezone UTC`` -> ``mcp-server-time``; an ``env``
    wrapper's program: ``env -C /srv X=1 mcp-shell-server`` -> ``mcp-shell-server``)."""
    if server in SERVERS:
        return server
    try:
        shlex.split(server)
    except ValueError:  # unbalanced quotes: a label, not a command
        return server
    program = split_command(server).program
    return program[0].rsplit("/", 1)[-1] if program else server
