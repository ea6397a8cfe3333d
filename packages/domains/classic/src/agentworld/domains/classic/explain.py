"""Rationales for SFT targets with reasoning, built from the real state change."""

from __future__ import annotations

from typing import Any

from agentworld.core.types import Step
from agentworld.domains.classic.render import IN_TAXI, Board, decode, status
from agentworld.domains.classic.variants import Kind, Variant

_DELTA = {"left": (0, -1), "right": (0, 1), "up": (-1, 0), "down": (1, 0)}


def _direction(before: Board, after: Board) -> str | None:
    delta = (after.row - before.row, after.col - before.col)
    return next((word for word, d in _DELTA.items() if d == delta), None)


def explain(variant: Variant, step: Step, previous_state: dict[str, Any] | None) -> str:
    """One or two sentences on what the action did, from ``previous_state`` (``Observation.state``)
    and ``step.observation.state``; a generic sentence when either is missing."""
    state = step.observation.state or {}
    if state.get("invalid") is not None:
        return f"{step.action.text.strip()!r} is not an action here; nothing changes, reward 0."
    if not previous_state or "s" not in previous_state or "s" not in state:
        return f"The agent plays {step.action.text.strip()}."
    before, after = decode(variant, previous_state["s"]), decode(variant, state["s"])
    after.terminated = bool(state.get("terminated"))
    word = step.action.text.strip().lower()
    where = f"({after.row}, {after.col})"
    if variant.kind is Kind.TAXI:
        if word in ("pickup", "dropoff"):
            if step.reward == -10:
                return f"{word} is illegal here: penalty -10, nothing changes."
            if after.passenger == IN_TAXI:
                return f"The taxi picks up the passenger at {before.passenger}."
            if after.terminated:
                return f"The taxi drops the passenger at the destination {after.destination}: +20."
            return f"The taxi drops the passenger at {after.passenger}, not the destination."
        if (before.row, before.col) == (after.row, after.col):
            return f"A wall or the edge blocks {word}; the taxi stays at {where}."
        return f"The taxi moves {word} to {where}."
    if variant.kind is Kind.CLIFFWALKING and step.reward == -100:
        return f"Moving {word} steps into the cliff: -100, back to the start {where}."
    moved = _direction(before, after)
    if moved is None:
        text = f"Moving {word} hits the edge; the agent stays at {where}."
    elif moved == word:
        text = f"The agent moves {word} to {where}."
    else:
        text = f"The agent tries {word} but slips {moved} to {where}."
    end = status(variant, after) if after.terminated else None
    return f"{text} It {end}." if end and end != "delivered" else text
