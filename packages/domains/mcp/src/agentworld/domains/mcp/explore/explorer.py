"""A server-agnostic explorer of any JSON-schema tool list: call chains that build state and then
read it, goal texts for them, and the next call of an episode from what the calls so far showed.

Nothing here knows a particular server or protocol: a tool is a wire-form definition
(``name``, ``description``, ``inputSchema``, optional ``annotations``), a call a ``(name,
arguments)`` pair and a response its text.

A *writer* changes state (a create/add/insert/... verb in its name, else
``annotations.readOnlyHint`` false); the others are *readers*. A writer and another tool are
*linked* when they share a noun of their names (``create_table`` and ``list_tables``,
``git_create_branch`` and ``git_branch``) or an argument that not every tool takes
(``branch_name``; ``repo_path`` on every tool links nothing). A chain is a writer, the writers
linked to it (creating ones first) and up to two linked readers, so its later calls read what
its earlier ones made.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from agentworld.core.tool_coverage import is_error_text
from agentworld.domains.mcp.explore.arguments import CREATE_VERBS, ArgumentMaker, creates
from agentworld.domains.mcp.explore.values import (
    ValuePool,
    mine_call,
    mine_command_line,
    mine_listing,
    mine_response,
    words,
)

READ_VERBS = {"get", "list", "read", "show", "search", "find", "describe", "status", "log",
              "query", "fetch", "view", "diff", "count", "lookup", "open"}
CHANGE_VERBS = CREATE_VERBS | {"update", "delete", "remove", "reset", "checkout", "rename",
                               "move", "edit", "modify", "complete", "close", "merge", "push"}
Call = tuple[str, dict[str, Any]]


def _common(tools: Sequence[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """Name words and argument names that at least half the tools share (``git``,
    ``repo_path``), which link nothing."""
    half = max(2, (len(tools) + 1) // 2)
    name_counts: dict[str, int] = {}
    arg_counts: dict[str, int] = {}
    for tool in tools:
        for w in set(words(tool["name"])):
            name_counts[w] = name_counts.get(w, 0) + 1
        for a in _args(tool):
            arg_counts[a] = arg_counts.get(a, 0) + 1
    return ({w for w, c in name_counts.items() if c >= half},
            {a for a, c in arg_counts.items() if c >= half})


def _args(tool: dict[str, Any]) -> list[str]:
    return list(((tool.get("inputSchema") or {}).get("properties") or {}).keys())


def writes(tool: dict[str, Any]) -> bool:
    """Whether a tool changes state (see the module docstring)."""
    name = set(words(tool["name"]))
    if name & CHANGE_VERBS:
        return True
    hint = (tool.get("annotations") or {}).get("readOnlyHint")
    return hint is False and not name & READ_VERBS


def _nouns(tool: dict[str, Any], common: set[str]) -> set[str]:
    return {w.rstrip("s") for w in words(tool["name"])} - {
        w.rstrip("s") for w in READ_VERBS | CHANGE_VERBS | common}


def linked(a: dict[str, Any], b: dict[str, Any], common: tuple[set[str], set[str]]) -> bool:
    """Whether tools ``a`` and ``b`` act on the same thing (see the module docstring)."""
    if _nouns(a, common[0]) & _nouns(b, common[0]):
        return True
    return bool((set(_args(a)) & set(_args(b))) - common[1])


def chains(tools: Sequence[dict[str, Any]]) -> list[list[str]]:
    """Tool-name chains of ``tools`` (see the module docstring), one per writer, in listing
    order; with no writer, one chain per reader that takes no required argument (then the
    reader after it)."""
    common = _common(tools)
    writers = [t for t in tools if writes(t)]
    readers = [t for t in tools if not writes(t)]
    out: list[list[str]] = []
    for writer in writers:
        partners = [t for t in writers if t is not writer and linked(writer, t, common)]
        first = sorted([writer, *partners[:1]], key=lambda t: not creates(t))
        reads = [t for t in readers if any(linked(t, w, common) for w in first)][:2]
        if not reads:
            overview = [t for t in readers if not (t.get("inputSchema") or {}).get("required")
                        or set((t.get("inputSchema") or {}).get("required")) <= common[1]]
            reads = overview[:1]
        out.append([t["name"] for t in first + reads])
    if not out:
        out = [[t["name"] for t in readers[i:i + 2]] for i in range(len(readers))]
    return [c for c in out if c] or [[t["name"]] for t in tools[:1]]


def goal_text(server: str, chain: Sequence[str], tools: Sequence[dict[str, Any]]) -> str:
    """A goal for a chain, from the tools' own descriptions: ``On NAME: create a new table ...
    (create_table), then list all tables ... (list_tables).``"""
    by_name = {t["name"]: t for t in tools}
    parts = []
    for name in chain:
        desc = str(by_name.get(name, {}).get("description") or name.replace("_", " "))
        desc = desc.strip().split("\n", 1)[0].rstrip(".")
        parts.append(f"{desc[:1].lower()}{desc[1:120]} ({name})")
    then = ", then ".join(parts)
    return f"On {server}: {then}; check that each step shows the state the earlier ones made."


class ToolExplorer:
    """One episode's explorer: follows ``chain`` (when given), then explores, preferring tools
    not yet answered without an error; arguments from :class:`ArgumentMaker` over the values
    mined from the server's command line, its listed resources and prompts and the episode so
    far.

    Args:
        tools: The server's tool definitions (wire form).
        seed: Seed of the episode.
        server: The server's command line (mined for paths, roots, URLs; ``""``: none).
        chain: Tool names to call first, in order.
        resources, prompts: What the server listed (wire form), mined for names and URIs.
        length: Calls in the episode (default: the chain plus 2-5, at most 10).
    """

    def __init__(self, tools: Sequence[dict[str, Any]], seed: int, server: str = "",
                 chain: Sequence[str] = (), resources: Sequence[dict[str, Any]] = (),
                 prompts: Sequence[dict[str, Any]] = (), length: int | None = None) -> None:
        self.tools = [t for t in tools if isinstance(t.get("name"), str)]
        self.by_name = {t["name"]: t for t in self.tools}
        self.rng = random.Random(f"mcp-explorer-{seed}")
        self.chain = [c for c in chain if c in self.by_name]
        self.length = length if length is not None else min(10, len(self.chain) + self.rng.randint(2, 5))
        self.pool = ValuePool()
        if server:
            mine_command_line(self.pool, server)
        mine_listing(self.pool, resources, "resource")
        mine_listing(self.pool, prompts, "prompt")
        self.maker = ArgumentMaker(self.rng, seed)
        self.ok: set[str] = set()
        self.failed: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self._position = 0

    def observe(self, call: Call | None, response: str) -> None:
        """Learn from one call and its response (``call`` ``None``: a response to a call that
        was not a tool call)."""
        error = is_error_text(response)
        if call is not None:
            mine_call(self.pool, call[0], call[1], not error)
            if error:
                self.failed[call[0]] = self.failed.get(call[0], 0) + 1
            else:
                self.ok.add(call[0])
            mine_response(self.pool, call[0], response)

    def next_call(self, made: int) -> Call | None:
        """The call after ``made`` calls, ``None`` once the episode's length is reached. When
        the chosen tool needs a value nothing shown yet gives (a table to describe before any
        was listed), a reader that can be called now is called first."""
        if made >= self.length or not self.tools:
            return None
        if self._position < len(self.chain):
            name = self.chain[self._position]
        else:
            weights = [3.0 if t["name"] not in self.ok and self.failed.get(t["name"], 0) < 2
                       else 1.0 if t["name"] in self.ok else 0.3 for t in self.tools]
            name = self.rng.choices(self.tools, weights=weights)[0]["name"]
        arguments = self.maker.arguments(self.by_name[name], self.pool)
        if self.maker.guessed:
            for other in self._discovery(name):
                other_arguments = self.maker.arguments(other, self.pool)
                if not self.maker.guessed:
                    return self._made(other["name"], other_arguments)
        if self._position < len(self.chain):
            self._position += 1
        return self._made(name, arguments)

    def _made(self, name: str, arguments: dict[str, Any]) -> Call:
        self.calls[name] = self.calls.get(name, 0) + 1
        return name, arguments

    def _discovery(self, skip: str) -> list[dict[str, Any]]:
        """Readers to call before a tool whose values are unknown, least called first."""
        readers = [t for t in self.tools if t["name"] != skip and not writes(t)]
        return sorted(readers, key=lambda t: (self.calls.get(t["name"], 0),
                                              len((t.get("inputSchema") or {}).get("required") or [])))[:4]
