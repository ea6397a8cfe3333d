"""Stateful MCP servers of our own, each runnable over stdio as
``python -m agentworld.domains.mcp.servers.<name> --data DIR``.

Each module holds a pure-Python store (importable without the SDK, so the environment can dump
a server's state from its data directory) and a ``main()`` that serves the store's tools with
the official ``mcp`` SDK (:mod:`agentworld.domains.mcp.servers.sdk`).
"""

#: Our servers: name -> module under this package.
SERVERS = ("notes", "records", "todo")
