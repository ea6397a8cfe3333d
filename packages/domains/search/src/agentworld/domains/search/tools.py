"""The tools of the search environment, with AgentWorldBench's names and output formats.

Names, arguments and output formats follow the public ``prompts/search/system_prompt.txt`` of
QwenLM/Qwen-AgentWorld ("Tool Execution"):

* ``web_search`` ``{"query": str}`` or ``{"queries": [str, ...]}`` (optional ``top_k``,
  1-20, default 10): per query, numbered results ``[i] URL`` / ``Title:`` / ``Snippet:`` /
  ``Date:``; a batch prefixes each query's results with ``## Results for "QUERY"``.
* ``web_extractor`` ``{"url": str}`` or ``{"urls": [str, ...]}`` (optional ``goal``): the
  page text in Markdown; with a ``goal``, the page's blocks (paragraphs, table rows) that share
  a word with the goal. Long content is paged as the reference MCP ``fetch`` server pages it
  (modelcontextprotocol/servers, ``src/fetch``: ``max_length``, default 5,000 characters, and
  ``start_index``, default 0): at most ``max_length`` characters from ``start_index``, then a
  line saying which characters were shown and the ``start_index`` of the rest.
* ``dict_memory`` ``{"operation": "add" | "update" | "retrieve" | "retrieve_all" | "remove" |
  "remove_all", "dict": {...}, "key_list": [...]}``; ``set``, ``get``, ``list`` and
  ``delete`` are accepted for ``add``, ``retrieve``, ``retrieve_all`` and ``remove``.
* ``answer`` ``{"answer": str}``: the agent's final answer (ends the episode).

Every tool error is an observation starting ``Error:``; nothing here raises on agent input.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentworld.core.toolcalls import ToolCallError
from agentworld.domains.search.engine import Engine, snippet

TOOLS = ("web_search", "web_extractor", "dict_memory", "answer")
MEMORY_OPS = ("add", "update", "retrieve", "retrieve_all", "remove", "remove_all")
MEMORY_ALIASES = {"set": "add", "get": "retrieve", "list": "retrieve_all", "delete": "remove"}
MAX_QUERIES = 5
MAX_LENGTH = 5000
"""``web_extractor``'s default ``max_length`` (characters), as the reference fetch server's."""
MAX_LENGTH_LIMIT = 100_000
_WORD = re.compile(r"\w\w+")
_STOP = frozenset("the of and for what which who when where how is are was were in on to a an "
                  "with from by its this that".split())

TOOL_DEFINITIONS: list[dict[str, Any]] = [
    {"name": "web_search", "description": "Search the web. Give one query or a batch of "
     "queries; returns up to 10 results per query (URL, title, snippet, date).",
     "parameters": {"type": "object", "properties": {
         "query": {"type": "string", "description": "One search query."},
         "queries": {"type": "array", "items": {"type": "string"},
                     "description": f"Up to {MAX_QUERIES} search queries."}}}},
    {"name": "web_extractor", "description": "Fetch web pages and return their content as "
     "Markdown; with a goal, only the parts relevant to it.",
     "parameters": {"type": "object", "properties": {
         "url": {"type": "string", "description": "The page URL."},
         "urls": {"type": "array", "items": {"type": "string"}},
         "goal": {"type": "string", "description": "What to look for on the page."},
         "max_length": {"type": "integer", "description": "Most characters to return "
                        f"(default {MAX_LENGTH})."},
         "start_index": {"type": "integer", "description": "Return content from this "
                         "character on (default 0), to read a truncated page further."}}}},
    {"name": "dict_memory", "description": "A persistent key-value memory.",
     "parameters": {"type": "object", "properties": {
         "operation": {"type": "string", "enum": list(MEMORY_OPS)},
         "dict": {"type": "object", "description": "Items to add or update."},
         "key_list": {"type": "array", "items": {"type": "string"},
                      "description": "Keys to retrieve or remove."}},
         "required": ["operation"]}},
    {"name": "answer", "description": "Give the final answer to the task; ends the episode.",
     "parameters": {"type": "object", "properties": {"answer": {"type": "string"}},
                    "required": ["answer"]}},
]


ToolError = ToolCallError  # a malformed call: its message is the tool's error observation


def _strings(arguments: dict[str, Any], one: str, many: str, tool: str) -> list[str]:
    if one in arguments and many in arguments:
        raise ToolError(f"Error: {tool}: give either {one!r} or {many!r}, not both")
    values = [arguments[one]] if one in arguments else arguments.get(many)
    if values is None:
        raise ToolError(f"Error: {tool}: missing argument {one!r} (a string) or {many!r} (a list)")
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise ToolError(f"Error: {tool}: {one!r} must be a string and {many!r} a non-empty "
                        "list of strings")
    if len(values) > MAX_QUERIES:
        raise ToolError(f"Error: {tool}: at most {MAX_QUERIES} {many} per call, got {len(values)}")
    return values


def _unknown(arguments: dict[str, Any], known: set[str], tool: str) -> None:
    extra = sorted(set(arguments) - known)
    if extra:
        raise ToolError(f"Error: {tool}: unknown argument(s) {', '.join(extra)}; valid: "
                        f"{', '.join(sorted(known))}")


def web_search(engine: Engine, arguments: dict[str, Any]) -> tuple[str, list[str]]:
    """The ``web_search`` observation and the URLs it listed.

    Raises:
        ToolError: a missing, ill-typed or unknown argument; ``top_k`` outside 1-20.
    """
    _unknown(arguments, {"query", "queries", "top_k"}, "web_search")
    queries = _strings(arguments, "query", "queries", "web_search")
    top_k = arguments.get("top_k", 10)
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= 20:
        raise ToolError(f"Error: web_search: top_k must be an integer from 1 to 20, got {top_k!r}")
    blocks, urls = [], []
    for query in queries:
        hits = engine.search(query, top_k) if query.strip() else []
        lines = [f'## Results for "{query}"'] if len(queries) > 1 else []
        if not hits:
            lines.append(f'No results found for "{query}".')
        for i, hit in enumerate(hits, 1):
            urls.append(hit.page.url)
            lines.append(f"[{i}] {hit.page.url}\nTitle: {hit.page.title}\n"
                         f"Snippet: {snippet(hit.page, query)}\nDate: {hit.page.date}")
        blocks.append("\n\n".join(lines))
    return "\n\n".join(blocks), urls


def _relevant(text: str, goal: str) -> str:
    terms = {w.lower() for w in _WORD.findall(goal)} - _STOP
    blocks = [b for b in text.split("\n\n") if b.strip()]
    kept = [blocks[0]]  # the heading
    for block in blocks[1:]:
        lines = block.splitlines()
        if lines[0].startswith("|"):  # a table: keep the matching rows
            rows = [r for r in lines[2:] if terms & {w.lower() for w in _WORD.findall(r)}]
            if rows:
                kept.append("\n".join(lines[:2] + rows))
        elif terms & {w.lower() for w in _WORD.findall(block)}:
            kept.append(block)
    return "\n\n".join(kept) if len(kept) > 1 else f"{text}\n\n(No part of the page matches the goal.)"


def web_extractor(engine: Engine, arguments: dict[str, Any]) -> tuple[str, list[str]]:
    """The ``web_extractor`` observation and the URLs it opened (found pages only).

    Raises:
        ToolError: a missing, ill-typed or unknown argument.
    """
    _unknown(arguments, {"url", "urls", "goal", "max_length", "start_index"}, "web_extractor")
    urls = _strings(arguments, "url", "urls", "web_extractor")
    goal = arguments.get("goal")
    if goal is not None and not isinstance(goal, str):
        raise ToolError(f"Error: web_extractor: goal must be a string, got {type(goal).__name__}")
    max_length = _integer(arguments, "max_length", MAX_LENGTH, 1, MAX_LENGTH_LIMIT)
    start = _integer(arguments, "start_index", 0, 0, None)
    parts, opened = [], []
    for url in urls:
        page = engine.page(url)
        if page is None:
            text = f"Error: failed to fetch {url}: page not found (HTTP 404)"
        else:
            opened.append(page.url)
            text = page_window(_relevant(page.text, goal) if goal and goal.strip() else page.text,
                               start, max_length)
        parts.append(f"## {url}\n\n{text}" if len(urls) > 1 else text)
    return "\n\n".join(parts), opened


def _integer(arguments: dict[str, Any], name: str, default: int, low: int, high: int | None) -> int:
    value = arguments.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < low or \
            (high is not None and value > high):
        valid = f"from {low} to {high}" if high is not None else f">= {low}"
        raise ToolError(f"Error: web_extractor: {name} must be an integer {valid}, got {value!r}")
    return value


def page_window(text: str, start: int, max_length: int) -> str:
    """At most ``max_length`` characters of ``text`` from ``start``; when more follows, a last
    line ``[Content truncated: characters START-END of TOTAL shown. Call web_extractor with
    start_index END to read more.]``; past the end, a line saying no more content is there."""
    if start and start >= len(text):
        return (f"Error: web_extractor: start_index {start} is past the end of the content "
                f"({len(text)} characters); no more content available.")
    end = min(len(text), start + max_length)
    window = text[start:end]
    if end < len(text):
        window += (f"\n\n[Content truncated: characters {start}-{end} of {len(text)} shown. "
                   f"Call web_extractor with start_index {end} to read more.]")
    return window


def _keys(arguments: dict[str, Any], op: str) -> list[str]:
    keys = arguments.get("key_list")
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
        raise ToolError(f"Error: dict_memory: {op} needs \"key_list\", a non-empty list of strings")
    return keys


def dict_memory(memory: dict[str, Any], arguments: dict[str, Any]) -> str:
    """Run one ``dict_memory`` operation on ``memory`` (changed in place); the observation.

    Raises:
        ToolError: an unknown operation or a missing or ill-typed ``dict``/``key_list``.
    """
    _unknown(arguments, {"operation", "dict", "key_list"}, "dict_memory")
    op = arguments.get("operation")
    op = MEMORY_ALIASES.get(op, op) if isinstance(op, str) else op
    if op not in MEMORY_OPS:
        raise ToolError(f"Error: dict_memory: unknown operation {op!r}; valid: "
                        f"{', '.join(MEMORY_OPS)}")
    if op in ("add", "update"):
        items = arguments.get("dict")
        if not isinstance(items, dict) or not items:
            raise ToolError(f'Error: dict_memory: {op} needs "dict", a non-empty object')
        if op == "update":
            missing = [k for k in items if k not in memory]
            if missing:
                return f"Error: Key not found: {json.dumps(missing, ensure_ascii=False)}"
        memory.update(items)
        verb, where = ("added", "to") if op == "add" else ("updated", "in")
        return f"Successfully {verb} items of {json.dumps(list(items), ensure_ascii=False)} " \
               f"{where} memory."
    if op == "retrieve_all":
        return json.dumps(memory, ensure_ascii=False, indent=2) if memory else "Memory is empty."
    if op == "remove_all":
        memory.clear()
        return "Successfully cleared all memory."
    keys = _keys(arguments, op)
    missing = [k for k in keys if k not in memory]
    if op == "retrieve":
        found = {k: memory[k] for k in keys if k in memory}
        lines = [json.dumps(found, ensure_ascii=False, indent=2)] if found else []
        if missing:
            lines.append(f"Key not found: {json.dumps(missing, ensure_ascii=False)}")
        return "\n".join(lines)
    if missing:
        return f"Error: Key not found: {json.dumps(missing, ensure_ascii=False)}"
    for k in keys:
        del memory[k]
    return f"Successfully removed items of {json.dumps(keys, ensure_ascii=False)} from memory."
