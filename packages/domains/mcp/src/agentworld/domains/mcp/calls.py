"""Tool calls as text (AgentWorldBench's MCP action form) and tool listings.

An action is rendered as the JSON tool call ``{"name": TOOL, "arguments": {...}}``; a text
action is parsed back from that form, fenced in a ```json block or not.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld.core.types import Action

CALL_FORM = '{"name": "<tool>", "arguments": {...}}'


def render_call(name: str, arguments: dict[str, Any]) -> str:
    """The JSON tool call text of ``name(arguments)`` (keys in the given order, UTF-8 kept)."""
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def tool_action(name: str, arguments: dict[str, Any]) -> Action:
    """An :class:`Action` of the call: its text is :func:`render_call`, with name and arguments."""
    return Action(text=render_call(name, arguments), name=name, arguments=arguments)


def unfence(text: str) -> str:
    """``text`` without a surrounding ```json ... ``` (or plain ```) fence."""
    body = text.strip()
    if body.startswith("```"):
        body = body.removeprefix("```json").removeprefix("```").strip()
        body = body.removesuffix("```").strip()
    return body


def parse_call(action: Action | str) -> tuple[str, dict[str, Any]] | str:
    """``(tool name, arguments)`` of an action, or a one-line error message saying what is
    wrong and the valid form.

    An :class:`Action` with ``name`` is taken as it is (``arguments`` default ``{}``); otherwise
    its text (or the ``str``) must be a JSON object ``{"name": str, "arguments": object}``
    (``arguments`` may be left out)."""
    if isinstance(action, Action) and action.name:
        return action.name, dict(action.arguments or {})
    text = unfence(action.text if isinstance(action, Action) else action)
    try:
        call = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"Error: the action is not valid JSON ({exc.msg} at position {exc.pos}); " \
               f"send a tool call {CALL_FORM}"
    if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
        return f"Error: a tool call is a JSON object with a string \"name\"; send {CALL_FORM}"
    arguments = call.get("arguments", {})
    if isinstance(arguments, str):  # OpenAI-style arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            pass
    if not isinstance(arguments, dict):
        return (f"Error: \"arguments\" of tool {call['name']!r} must be a JSON object, got "
                f"{type(arguments).__name__}; send {CALL_FORM}")
    return call["name"], arguments


def _type_of(schema: dict[str, Any]) -> str:
    if "type" in schema:
        kind = schema["type"]
        return "|".join(kind) if isinstance(kind, list) else str(kind)
    options = [_type_of(s) for s in schema.get("anyOf", []) if s.get("type") != "null"]
    return "|".join(options) or "any"


def signature(tool: dict[str, Any]) -> str:
    """``name(arg: type, opt?: type)`` of a tool definition in wire form."""
    schema = tool.get("inputSchema") or {}
    required = set(schema.get("required") or [])
    args = [f"{name}{'' if name in required else '?'}: {_type_of(spec)}"
            for name, spec in (schema.get("properties") or {}).items()]
    return f"{tool['name']}({', '.join(args)})"


def parse_signature(line: str) -> tuple[str, list[tuple[str, str, bool]]] | None:
    """Inverse of :func:`signature` for one listing line ``- name(a: t, b?: t)``:
    ``(name, [(arg, type, required)])``, or ``None`` for another line."""
    line = line.strip().removeprefix("- ")
    if "(" not in line or not line.endswith(")"):
        return None
    name, _, inner = line[:-1].partition("(")
    args = []
    for part in filter(None, (p.strip() for p in inner.split(","))):
        arg, _, kind = part.partition(":")
        args.append((arg.rstrip("?").strip(), kind.strip(), not arg.strip().endswith("?")))
    return name.strip(), args


def listing(server: str, tools: list[dict[str, Any]]) -> str:
    """The initial observation: the server and one signature line per tool."""
    lines = [f"Connected to MCP server {server!r}. {len(tools)} tools available:"]
    lines += [f"- {signature(t)}" for t in tools]
    return "\n".join(lines)


def definitions(tools: list[dict[str, Any]]) -> str:
    """The tool definitions (``name``, ``description``, ``inputSchema``) as a world model's
    system prompt lists them: one compact JSON object per line, as Qwen's chat template lists
    tools inside ``<tools>``. Indented, the three servers' schemas took 3,400-7,700 characters,
    past a small model's prompt budget."""
    keep = [{k: t[k] for k in ("name", "description", "inputSchema") if k in t} for t in tools]
    lines = [json.dumps(tool, ensure_ascii=False, separators=(",", ":")) for tool in keep]
    return "<tools>\n" + "\n".join(lines) + "\n</tools>"
