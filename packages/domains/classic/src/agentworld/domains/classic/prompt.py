"""World-model system prompts of the classic domains."""

from __future__ import annotations

from agentworld.core.types import Task
from agentworld.domains.classic.variants import Kind, Variant

# Kept short on purpose: every simulated step's prompt starts with it, and a model trained on
# the domain learns the dynamics from data, not from this text.
FOOTER = "Then the footer <reward>R</reward><terminated>true|false</terminated>."
_INVALID = "Another action: the line `invalid action: X; valid: {actions}` above the same state."

_FROZENLAKE = """FrozenLake {size} ({gym_id}), {dynamics}. S start, F ice, H hole, G goal, A agent.
Actions: left, down, right, up; off-grid moves stay. Reward 1 at G. G or H ends the episode.
Reply: the grid, `reward: R`, then `status: reached the goal` or `status: fell in a hole` at the end."""

_CLIFF = """CliffWalking (CliffWalking-v1), 4x12, deterministic. . free, S start, C cliff, G goal, A agent.
Actions: left, down, right, up; off-grid moves stay. Reward -1 per step; the cliff gives -100 and returns to S. G ends the episode.
Reply: the grid, `reward: R`, then `status: reached the goal` at G."""

_TAXI = """Taxi (Taxi-v4), 5x5, deterministic. | walls, : open, R G Y B stops, T taxi, @ taxi carrying the passenger.
Actions: south, north, east, west (walls and edges block), pickup, dropoff. Reward -1 per step; a wrong pickup or dropoff -10, no change; dropoff at the destination +20 ends the episode.
Reply: the map, `passenger: at X, destination: Y` (or `in taxi`), `reward: R`, then `status: delivered` at the end."""


def system_prompt(variant: Variant, task: Task | None = None) -> str:
    """The world-model system prompt: legend, actions, dynamics, reward rule, reply layout, footer.

    The task instruction and the initial observation are added by the core
    renderer (:func:`agentworld.core.formats.system_message`), so ``task``
    changes nothing here.
    """
    if variant.kind is Kind.FROZENLAKE:
        dynamics = (
            "slippery: the intended or either perpendicular move, 1/3 each"
            if variant.slippery
            else "deterministic"
        )
        size = variant.kwargs["map_name"]
        head = _FROZENLAKE.format(size=size, gym_id=variant.gym_id, dynamics=dynamics)
    elif variant.kind is Kind.CLIFFWALKING:
        head = _CLIFF
    else:
        head = _TAXI
    invalid = _INVALID.format(actions=", ".join(variant.actions))
    return f"{head}\n{invalid}\n{FOOTER}"
