"""SFT rationales for tool-call domains (mcp, search, swe): what a call asks and what it reads.

A tool domain's next observation is the tool's response to a JSON tool call
(:mod:`agentworld.core.toolcalls`). Before predicting it, a world model has to decide two
things the history already holds: whether the call is well formed against the tool
definitions (a malformed or ill-typed call gets an error, whatever the state), and which
earlier turns made or showed what the call refers to (a note created at turn 2 and read back at
turn 5, a URL a search listed, a file edited before the tests run). The rationale states both::

    call get_note {"note_id": 3}
    check: arguments match the schema of get_note
    reads: turn 2 (its call or its response shows 3)
    turn 2: {"name": "create_note", "arguments": {"title": "Rome", "body": "..."}}

Lines, in order:

* ``call NAME ARGUMENTS`` (compact JSON), or ``malformed call: REASON`` when the text is no
  tool call (the reason is :class:`~agentworld.core.toolcalls.ToolCallError`'s message);
* ``check: ...``: ``unknown tool NAME; tools: ...``, or the argument problems against the tool's
  JSON schema (a missing required argument, an argument the schema does not name, a value of
  the wrong JSON type), or ``arguments match the schema of NAME``; no line when no tool
  definitions are known (a third-party server before its listing);
* ``reads: turn K, ...`` and one ``turn K: CALL`` line per source: the latest
  :data:`MAX_SOURCES` earlier turns whose call or response shows one of the call's argument
  values (strings of 3 or more characters, shown whole; integers, shown as JSON values), plus
  the turns a domain names as always relevant (``extra``: the swe domain's earlier edits before
  a test run); each call in compact JSON.

The rationale depends only on the action and the episode's earlier steps (``history``: ``(action
text, observation text before it)``, oldest first, as :func:`agentworld.core.rationales.
step_history` gives them), never on the step's own observation, so a simulator writes the same
text before it predicts: a domain's ``explain`` and ``explain_text`` both return
:func:`call_rationale`. Turns are numbered from 1, as AgentWorldBench's ``### Turn K`` prompts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentworld.core.toolcalls import ToolCallError, parse_call

MAX_SOURCES = 3
"""At most this many earlier turns are named (the latest)."""
MAX_CALL_CHARS = 160
"""Calls are shown cut to this many characters (``...`` appended)."""

Argument = tuple[str, str, bool]
"""``(name, JSON type such as "string" or "integer|null", required)`` of one tool argument."""
Signatures = Mapping[str, Sequence[Argument]]
"""Tool name -> its arguments, in schema order."""
History = Sequence[tuple[str, str]]
"""``(action text, observation text before it)`` of each earlier step, oldest first."""

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list,), "object": (dict,), "null": (type(None),),
}


def _schema_type(schema: Mapping[str, Any]) -> str:
    if "type" in schema:
        kind = schema["type"]
        return "|".join(kind) if isinstance(kind, list) else str(kind)
    options = [_schema_type(s) for s in schema.get("anyOf", []) if isinstance(s, Mapping)]
    return "|".join(options) or "any"


def signatures(definitions: Iterable[Mapping[str, Any]]) -> dict[str, list[Argument]]:
    """:data:`Signatures` of tool definitions in either wire form: OpenAI's ``parameters`` or
    MCP's ``inputSchema`` (a JSON Schema object with ``properties`` and ``required``; a
    property's type is its ``type``, or the types of its ``anyOf`` joined by ``|``)."""
    out: dict[str, list[Argument]] = {}
    for tool in definitions:
        schema = tool.get("inputSchema") or tool.get("parameters") or {}
        required = set(schema.get("required") or [])
        out[str(tool["name"])] = [(name, _schema_type(spec), name in required)
                                  for name, spec in (schema.get("properties") or {}).items()]
    return out


def _has_type(value: Any, kind: str) -> bool:
    """Whether ``value`` is of JSON type ``kind`` (``a|b``: either; ``any`` or an unknown
    name: anything). A boolean is no integer or number."""
    for name in kind.split("|"):
        accepted = _JSON_TYPES.get(name.strip())
        if accepted is None:
            return True
        if isinstance(value, bool) and bool not in accepted:
            continue
        if isinstance(value, accepted):
            return True
    return False


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    for name in ("boolean", "integer", "number", "string", "array", "object"):
        if isinstance(value, _JSON_TYPES[name]) and (name == "boolean") == isinstance(value, bool):
            return name
    return type(value).__name__


def check(name: str, arguments: Mapping[str, Any], tools: Signatures) -> str:
    """The ``check:`` text of a call against ``tools`` (see the module docstring)."""
    if name not in tools:
        return f"unknown tool {name}; tools: {', '.join(tools) or 'none'}"
    spec = {arg: (kind, required) for arg, kind, required in tools[name]}
    problems = [f"missing required argument {arg}" for arg, (_, required) in spec.items()
                if required and arg not in arguments]
    problems += [f"argument {arg} is not in the schema (valid: {', '.join(spec) or 'none'})"
                 for arg in arguments if arg not in spec]
    problems += [f"argument {arg} should be {spec[arg][0]}, got {_json_type(value)}"
                 for arg, value in arguments.items()
                 if arg in spec and not _has_type(value, spec[arg][0])]
    return "; ".join(problems) or f"arguments match the schema of {name}"


def values_of(arguments: Any) -> set[str]:
    """The argument values a call refers to, as text: strings of 3 or more characters and
    integers (booleans excluded), found in nested lists and objects too."""
    out: set[str] = set()
    if isinstance(arguments, Mapping):
        for value in arguments.values():
            out |= values_of(value)
    elif isinstance(arguments, list):
        for value in arguments:
            out |= values_of(value)
    elif isinstance(arguments, str) and len(arguments.strip()) >= 3:
        out.add(arguments.strip())
    elif isinstance(arguments, int) and not isinstance(arguments, bool):
        out.add(str(arguments))
    return out


def _shows(text: str, value: str) -> bool:
    """Whether ``text`` shows ``value``: an integer as a JSON value (after ``:``, ``[`` or
    ``, ``: ``"id": 3``, not line 3 of a traceback), a string as a whole (``/home/agent`` is
    not shown by ``/home/agent/x.py``, nor ``Rome`` by ``Romeo``)."""
    if value.lstrip("-").isdigit():
        pattern = rf"(?:(?<=:)|(?<=: )|(?<=\[)|(?<=, )){re.escape(value)}(?![\w.])"
    else:
        pattern = rf"(?<![\w/.-]){re.escape(value)}(?![\w/])"
    return re.search(pattern, text) is not None


def sources(values: set[str], history: History, extra: Iterable[int] = ()) -> list[int]:
    """0-based indices of earlier steps whose call, or whose response (the observation before
    the next step), shows one of ``values``, together with ``extra``; the latest
    :data:`MAX_SOURCES`, oldest first."""
    found = set(extra)
    for k, (action, _) in enumerate(history):
        response = history[k + 1][1] if k + 1 < len(history) else ""
        if any(_shows(action, v) or _shows(response, v) for v in values):
            found.add(k)
    return sorted(found)[-MAX_SOURCES:]


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CALL_CHARS else text[:MAX_CALL_CHARS] + " ..."


def _compact(action: str) -> str:
    """An earlier action as its call in compact JSON (fences and indentation dropped), cut
    to :data:`MAX_CALL_CHARS`; its text when it is no tool call."""
    try:
        name, arguments = parse_call(action)
    except ToolCallError:
        return _cut(action)
    return _cut(json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False))


def call_rationale(
    action: str,
    history: History = (),
    tools: Signatures | None = None,
    extra: Iterable[int] = (),
) -> str:
    """The rationale of tool call ``action`` (see the module docstring).

    Args:
        action: The action text, a JSON tool call (fenced or in ``<tool_call>`` tags allowed).
        history: The episode's earlier steps (see :data:`History`).
        tools: The tool definitions known to the domain (:func:`signatures`); ``None``: no
            ``check:`` line.
        extra: 0-based indices of earlier steps to name whatever their values (domain rules).

    Returns:
        Two to six lines of text, never empty.
    """
    try:
        name, arguments = parse_call(action)
    except ToolCallError as error:
        return f"malformed call: {str(error).removeprefix('Error: ')}"
    lines = [f"call {name} {json.dumps(arguments, ensure_ascii=False, separators=(', ', ': '))}"]
    lines[0] = _cut(lines[0])
    if tools is not None:
        lines.append(f"check: {check(name, arguments, tools)}")
    turns = sources(values_of(arguments), history, extra)
    if turns:
        lines.append("reads: " + ", ".join(f"turn {k + 1}" for k in turns))
        lines += [f"turn {k + 1}: {_compact(history[k][0])}" for k in turns]
    return "\n".join(lines)
