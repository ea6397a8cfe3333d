"""Our servers by name: their command lines and their state dumps."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from agentworld.domains.mcp.servers import SERVERS
from agentworld.domains.mcp.servers.notes import NotesStore
from agentworld.domains.mcp.servers.records import RecordsStore
from agentworld.domains.mcp.servers.todo import TodoStore

_STORES = {"notes": NotesStore, "records": RecordsStore, "todo": TodoStore}


def command(server: str, data: Path) -> list[str]:
    """The argv of a server: one of ours by name (run with this interpreter, state in
    ``data``), else ``server`` split as a shell command line (a third-party stdio server).

    Raises:
        ValueError: ``server`` is empty.
    """
    if server in SERVERS:
        return [sys.executable, "-m", f"agentworld.domains.mcp.servers.{server}",
                "--data", str(data)]
    argv = shlex.split(server)
    if not argv:
        raise ValueError(f"server must name one of ours ({', '.join(SERVERS)}) or be a command "
                         "line such as 'uvx mcp-server-time', got an empty string")
    return argv


def dump(server: str, data: Path) -> dict[str, Any] | None:
    """The state of one of our servers read from its data directory, ``None`` for another."""
    store = _STORES.get(server)
    return store(data).dump() if store is not None else None


def label(server: str) -> str:
    """How listings name a server: ours by name, another by its program's file name
    (``/venv/bin/mcp-server-time --local-timezone UTC`` -> ``mcp-server-time``)."""
    if server in SERVERS:
        return server
    argv = shlex.split(server)
    return argv[0].rsplit("/", 1)[-1] if argv else server
