"""A task check re-derived from a (simulated) transcript of tool calls and responses.

Inside a simulator there is no server state to dump, only what the world model answered.
:func:`verify_transcript` decides a task's check (:mod:`agentworld.domains.mcp.checks`) from
the transcript alone, by rules:

* ``{"answer": V, "key": K}``: the last response shows ``V`` (:func:`checks.shows`), as the
  real check reads it;
* ``{"has": {"path": P, "fields": F}}``: some object with every field of ``F`` appears in the
  arguments of a call that succeeded (its response is not an error) or in such a call's
  response (``{"created": {...}}``), so the state the calls built holds such an item;
* ``{"lacks": ...}``: undecidable from a transcript (an absence needs the whole state), so a
  check with one gives ``None``.

A response is an error when it starts as the servers' errors do (``Error``, ``Unknown tool``;
see :data:`agentworld.domains.mcp.prompt.ROLE`). Given the server's tool definitions, a call is
also an error, whatever the simulator answered, when it names no tool or its arguments fail
the tool's ``inputSchema`` (JSON Schema, checked with ``jsonschema``), as the real server
refuses it: a world model that never learned those errors otherwise rewards such calls. Beyond
that the rules trust the simulated responses, which is what the real replay of
:mod:`agentworld.trainers.agents.simrl.replay` measures.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import jsonschema

from agentworld.core.types import Task
from agentworld.domains.mcp.calls import parse_call
from agentworld.domains.mcp.checks import CONDITIONS, equal, shows

ERROR_PREFIXES = ("Error", "Unknown tool")


def is_error(response: str) -> bool:
    """Whether a tool response text is an error result (see the module docstring)."""
    return response.lstrip().startswith(ERROR_PREFIXES)


def objects(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object nested in ``value`` (itself first when it is one)."""
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from objects(v)
    elif isinstance(value, list):
        for v in value:
            yield from objects(v)


def refused(action: str, tools: Sequence[dict[str, Any]] | None) -> bool:
    """Whether the server refuses the call ``action`` before running it: not a JSON tool call
    or, given ``tools`` (definitions in wire form), an unknown tool or arguments that fail
    its ``inputSchema``."""
    parsed = parse_call(action)
    if isinstance(parsed, str):
        return True
    if tools is None:
        return False
    tool = next((t for t in tools if t.get("name") == parsed[0]), None)
    if tool is None:
        return True
    try:
        jsonschema.validate(parsed[1], tool.get("inputSchema") or {})
    except jsonschema.ValidationError:
        return True
    return False


def _evidence(
    transcript: Sequence[tuple[str, str]], tools: Sequence[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """Objects the successful calls of ``transcript`` put in place or reported back."""
    found: list[dict[str, Any]] = []
    for action, response in transcript:
        parsed = parse_call(action)
        if isinstance(parsed, str) or is_error(response) or refused(action, tools):
            continue
        found += objects(parsed[1])
        try:
            found += objects(json.loads(response))
        except json.JSONDecodeError:
            pass
    return found


def verify_transcript(
    task: Task | None,
    transcript: Sequence[tuple[str, str]],
    tools: Sequence[dict[str, Any]] | None = None,
) -> tuple[float, bool] | None:
    """``(1.0, True)`` when every condition of ``task``'s check holds on ``transcript``
    (``[(action text, response text), ...]``, oldest first), ``(0.0, False)`` when one does
    not, ``None`` when the check cannot be decided from a transcript (no task, an empty
    check, a ``lacks`` condition). ``tools``: the server's tool definitions (wire form), to
    count calls the server would refuse as errors. The rules are in the module docstring.

    Raises:
        ValueError: a condition is none of :data:`agentworld.domains.mcp.checks.CONDITIONS`.
    """
    conditions = task.check.get("all") if task is not None else None
    if not conditions:
        return None
    for cond in conditions:
        if not any(k in cond for k in CONDITIONS):
            raise ValueError(f"unknown check condition {sorted(cond)}; valid: {CONDITIONS}")
    if any("lacks" in c for c in conditions):
        return None
    if not transcript:
        return 0.0, False
    evidence = _evidence(transcript, tools)
    last_action, last = transcript[-1]
    for cond in conditions:
        if "answer" in cond:
            ok = not is_error(last) and not refused(last_action, tools) and shows(
                last, cond["answer"], cond.get("key"))  # fmt: skip
        else:
            fields = cond["has"]["fields"]
            ok = any(all(equal(o.get(k), v) for k, v in fields.items()) for o in evidence)
        if not ok:
            return 0.0, False
    return 1.0, True
