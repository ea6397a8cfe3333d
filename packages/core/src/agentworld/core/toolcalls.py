"""JSON tool calls as tool domains take them: ``{"name": TOOL, "arguments": {...}}``.

The form of the public AgentWorldBench tool domains' actions (and of OpenAI-style function
calls, whose ``arguments`` may be a JSON string). One parser for every domain whose actions are
tool calls; a malformed call is a :class:`ToolCallError` whose one-line message is the tool's
error observation, never an exception out of a step.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentworld.core.types import Action

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")
_TOOL_CALL = re.compile(r"</?tool_call>")


class ToolCallError(ValueError):
    """A malformed tool call; its message is the tool's error observation (one line)."""


def parse_call(text: str) -> tuple[str, dict[str, Any]]:
    """``(name, arguments)`` of a JSON tool call ``{"name": ..., "arguments": {...}}`` (also
    inside a ```` ```json ```` fence or ``<tool_call>`` tags; ``arguments`` may be a JSON
    string, and missing means ``{}``).

    Raises:
        ToolCallError: invalid JSON, no string ``name`` or non-object ``arguments``.
    """
    body = _FENCE.sub("", _TOOL_CALL.sub("", text).strip()).strip()
    try:
        call = json.loads(body)
    except json.JSONDecodeError as error:
        raise ToolCallError(f"Error: the action is not a JSON tool call ({error.msg} at character "
                            f'{error.pos}); expected {{"name": ..., "arguments": {{...}}}}') from None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise ToolCallError('Error: a tool call needs a string "name" and an "arguments" object')
    arguments = call.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            raise ToolCallError('Error: "arguments" is a string that is not JSON') from None
    if not isinstance(arguments, dict):
        raise ToolCallError('Error: "arguments" must be a JSON object')
    return call["name"], arguments


def call_of(action: Action | str) -> tuple[str, dict[str, Any]]:
    """``(tool, arguments)`` of an action: its ``name`` and ``arguments`` when set, else its
    text parsed as a JSON tool call (:func:`parse_call`).

    Raises:
        ToolCallError: the text is not a tool call, or ``arguments`` is not an object.
    """
    if isinstance(action, Action) and action.name:
        if action.arguments is not None and not isinstance(action.arguments, dict):
            raise ToolCallError('Error: "arguments" must be a JSON object')
        return action.name, dict(action.arguments or {})
    return parse_call(action.text if isinstance(action, Action) else str(action))
