"""A server-agnostic explorer of any JSON-schema tool list: call chains that build state and then
read it, goal texts for them, and the next call of an episode from what the calls so far showed.

Nothing here knows a particular server or protocol: a tool is a wire-form definition
(``name``, ``description``, ``inputSchema``, optional ``annotations``), a call a ``(name,
arguments)`` pair and a response its text.

A *writer* changes state (a create/add/insert/... verb in its name, else
``annotations.readOnlyHint`` false); the others are *readers*. A writer and another tool are
*linked* when they share a noun of their names (``create_table`` and ``list_tables``,
``git_create_branch`` and ``git_branch``) or an argument that not every tool takes
(``branch_name``; ``repo_path`` on every tool links nothing), or, more weakly, when one's noun
is a word of the other's description (``git_commit`` and ``git_log``: "Shows the commit logs"). A chain is a writer, the writers
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
    singular,
    words,
)

READ_VERBS = {"get", "list", "read", "show", "search", "find", "describe", "status", "log",
              "query", "fetch", "view", "diff", "count", "lookup", "open"}
CHANGE_VERBS = CREATE_VERBS | {"update", "delete", "remove", "reset", "checkout", "rename",
                               "move", "edit", "modify", "complete", "close", "merge", "push"}
Call = tuple[str, dict[str, Any]]
MAX_DEFERRALS = 2
"""Times a tool whose values are unknown waits for a reader to show them; then it is called
with its best guess (its error may say what it wants), so a chain never stalls on it."""


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
    """The stemmed words of a tool's name but its verbs and the words most tools share; a
    name that is only a verb (``git_commit``) keeps the verb."""
    named = {singular(w) for w in words(tool["name"])} - {singular(w) for w in common}
    return (named - {singular(w) for w in READ_VERBS | CHANGE_VERBS}) or named


def _described(tool: dict[str, Any]) -> set[str]:
    return {singular(w) for w in words(str(tool.get("description") or ""))}


def linked(a: dict[str, Any], b: dict[str, Any], common: tuple[set[str], set[str]]) -> bool:
    """Whether tools ``a`` and ``b`` act on the same thing (see the module docstring)."""
    return _link(a, b, common) > 0


def _link(a: dict[str, Any], b: dict[str, Any], common: tuple[set[str], set[str]]) -> int:
    """2: a shared name noun or argument; 1: one's name noun in the other's description
    (``git_commit`` and ``git_log``, "Shows the commit logs"); 0: none."""
    na, nb = _nouns(a, common[0]), _nouns(b, common[0])
    if na & nb or (set(_args(a)) & set(_args(b))) - common[1]:
        return 2
    return int(bool(na & _described(b) or nb & _described(a)))


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
        strength = {t["name"]: max(_link(t, w, common) for w in first) for t in readers}
        reads = sorted((t for t in readers if strength[t["name"]]),
                       key=lambda t: -strength[t["name"]])[:2]
        if not reads:
            overview = [t for t in readers if not (t.get("inputSchema") or {}).get("required")
                        or set((t.get("inputSchema") or {}).get("required")) <= common[1]]
            reads = overview[:1]
        chain = [t["name"] for t in first + reads]
        if chain not in out:
            out.append(chain)
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
    not yet answered without an error and readers of what a call just changed; a tool an
    error message names (``use git_add first``) is called next, then the failed one again;
    arguments from :class:`ArgumentMaker` over the values
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
        self._common = _common(self.tools)
        self._queue: list[str] = []  # tools an error told to call first, then the failed one
        self._last_writer: dict[str, Any] | None = None
        self._deferred: dict[str, int] = {}  # times a tool waited for a reader's values

    def observe(self, call: Call | None, response: str) -> None:
        """Learn from one call and its response (``call`` ``None``: a response to a call that
        was not a tool call)."""
        error = is_error_text(response)
        if call is None:
            return
        mine_call(self.pool, call[0], call[1], not error)
        mine_response(self.pool, call[0], response)
        if not error:
            self.ok.add(call[0])
            if call[0] in self.by_name and writes(self.by_name[call[0]]):
                self._last_writer = self.by_name[call[0]]
            return
        self.failed[call[0]] = self.failed.get(call[0], 0) + 1
        named = [t for t in self.by_name if t != call[0] and t in response]
        if named and self.failed[call[0]] == 1:  # "use git_add to stage changes first"
            self._queue = [*named[:2], call[0]]

    def next_call(self, made: int) -> Call | None:
        """The call after ``made`` calls, ``None`` once the episode's length is reached. When
        the chosen tool needs a value nothing shown yet gives (a table to describe before any
        was listed), a reader that can be called now is called first, at most
        :data:`MAX_DEFERRALS` times for that tool."""
        if made >= self.length or not self.tools:
            return None
        from_chain = False
        if self._queue:
            name = self._queue.pop(0)
        elif self._position < len(self.chain):
            name, from_chain = self.chain[self._position], True
        else:
            name = self.rng.choices(self.tools, weights=[self._weight(t) for t in self.tools])[0]["name"]
        arguments = self.maker.arguments(self.by_name[name], self.pool)
        if self.maker.guessed and self._deferred.get(name, 0) < MAX_DEFERRALS:
            self._deferred[name] = self._deferred.get(name, 0) + 1
            for other in self._discovery(name):
                other_arguments = self.maker.arguments(other, self.pool)
                if not self.maker.guessed:
                    return self._made(other["name"], other_arguments)
        self._position += from_chain
        return self._made(name, arguments)

    def _weight(self, tool: dict[str, Any]) -> float:
        """Untried tools first, failing ones last; a reader of what the last successful
        writer changed three times as likely (the episode reads the state it built)."""
        name = tool["name"]
        weight = 3.0 if name not in self.ok and self.failed.get(name, 0) < 2 else \
            1.0 if name in self.ok else 0.3
        writer = self._last_writer
        if writer is not None and not writes(tool) and linked(tool, writer, self._common):
            weight *= 3.0
        return weight

    def _made(self, name: str, arguments: dict[str, Any]) -> Call:
        self.calls[name] = self.calls.get(name, 0) + 1
        return name, arguments

    def _discovery(self, skip: str) -> list[dict[str, Any]]:
        """Readers to call before a tool whose values are unknown, least called first."""
        readers = [t for t in self.tools if t["name"] != skip and not writes(t)]
        return sorted(readers, key=lambda t: (self.calls.get(t["name"], 0),
                                              len((t.get("inputSchema") or {}).get("required") or [])))[:4]
