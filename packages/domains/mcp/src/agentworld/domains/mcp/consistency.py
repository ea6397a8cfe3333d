"""In-episode consistency: the turns whose real response depends on state an earlier turn of
the same episode changed.

A turn changed state when the server's dumped state (``observation.state["data"]``, recorded
from :meth:`~agentworld.domains.mcp.env.McpEnv.privileged_state`) differs from the one before
it. Its changed values are the scalar values of the new state that the old one nowhere has (a new
body, a new row's cells, a ``done`` flag), with the scalar arguments of its call (the title it
wrote, the id it deleted). A later turn depends on it when its response shows one of those
values or its call names one; a whole-collection read (a call without arguments) depends on any
earlier change. Episodes without dumped state (a third-party server) count a turn after a
successful call whose tool name starts with a writing verb instead.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld.core.types import Episode, Step
from agentworld.domains.mcp.calls import parse_call
from agentworld.domains.mcp.checks import leaves

WRITE_VERBS = ("create", "add", "insert", "update", "delete", "remove", "set", "write", "put",
               "complete", "reschedule", "move", "rename", "edit", "append")


def _scalars(value: Any) -> set[str]:
    return {json.dumps(v, sort_keys=True) for _, v in leaves(value)
            if not isinstance(v, bool) and v not in (None, "")}


def _call(step: Step) -> tuple[str, dict[str, Any]] | None:
    parsed = parse_call(step.action)
    return None if isinstance(parsed, str) else parsed


def _shown(text: str) -> set[str]:
    try:
        return _scalars(json.loads(text))
    except json.JSONDecodeError:
        return set()


def consistency_turns(episode: Episode) -> list[int]:
    """Indices of ``episode.steps`` (0-based) that depend on an earlier turn's change (see the
    module docstring), ascending."""
    before = (episode.initial_observation.state or {}).get("data")
    changed: set[str] = set()
    any_change = False
    turns: list[int] = []
    for turn, step in enumerate(episode.steps):
        call = _call(step)
        after = (step.observation.state or {}).get("data")
        if any_change and call is not None and (
            not call[1] or (_scalars(call[1]) | _shown(step.observation.text)) & changed
        ):
            turns.append(turn)
        if after is not None or before is not None:
            if after != before and after is not None:
                old = {json.dumps(x, sort_keys=True) for _, x in leaves(before or {})}
                new = {json.dumps(x, sort_keys=True) for _, x in leaves(after)}
                changed |= {v for v in new - old if v not in ('""', "null", "true", "false")}
                changed |= _scalars(call[1]) if call else set()
                any_change = True
            before = after
        elif call is not None and not step.info.get("is_error") and \
                call[0].lower().startswith(WRITE_VERBS):
            changed |= _scalars(call[1])
            any_change = True
    return turns
