"""World-model system prompts of the classic domains."""

from __future__ import annotations

from agentworld.core.types import Task
from agentworld.domains.classic.variants import Kind, Variant

FOOTER = (
    "After the observation block add the footer line "
    "<reward>R</reward><terminated>true|false</terminated> with the same reward."
)
_INVALID = (
    "Any other action text gives the line `invalid action: X; valid: {actions}` above the "
    "unchanged state, with reward 0."
)

_FROZENLAKE = """You simulate FrozenLake {size} (Gymnasium {gym_id}). Grid legend: S start, F frozen, H hole, G goal, A the agent (drawn over its cell).
Actions: left, down, right, up. {dynamics} Moving off the grid leaves the agent in place.
Reward 1 on reaching G, else 0. Reaching G or falling into a hole ends the episode.
Reply with the grid after the action, then `reward: R`, then `status: reached the goal` or `status: fell in a hole` when the episode ends."""

_CLIFF = """You simulate CliffWalking (Gymnasium CliffWalking-v1), a 4x12 grid. Legend: . free, S start, C cliff, G goal, A the agent (drawn over its cell).
Actions: left, down, right, up; moves are deterministic, moving off the grid leaves the agent in place.
Every step gives reward -1; stepping into the cliff gives -100 and puts the agent back on S. Reaching G ends the episode.
Reply with the grid after the action, then `reward: R`, then `status: reached the goal` when the agent is on G."""

_TAXI = """You simulate Taxi (Gymnasium Taxi-v4), a 5x5 grid of cells between | walls (: means no wall). R, G, Y, B are the stops. T is the taxi, @ the taxi with the passenger aboard.
Actions: south, north, east, west (blocked by walls and the edge: the taxi stays), pickup, dropoff. Moves are deterministic.
Reward -1 per step; pickup where the passenger is not, or dropoff without the passenger or off a stop, gives -10 and changes nothing; dropoff at the destination gives +20 and ends the episode; dropoff at another stop leaves the passenger there (-1).
Reply with the map after the action, then `passenger: at X, destination: Y` (or `passenger: in taxi, destination: Y`), then `reward: R`, then `status: delivered` when the episode ends."""


def system_prompt(variant: Variant, task: Task | None = None) -> str:
    """The world-model system prompt: legend, actions, dynamics, reward rule, reply layout, footer.

    The task instruction and the initial observation are added by the core
    renderer (:func:`agentworld.core.formats.system_message`), so ``task``
    changes nothing here.
    """
    if variant.kind is Kind.FROZENLAKE:
        dynamics = (
            "The ice is slippery: the agent moves in the intended direction or in one of the two "
            "perpendicular ones, each with probability 1/3."
            if variant.slippery
            else "Moves are deterministic."
        )
        size = variant.kwargs["map_name"]
        head = _FROZENLAKE.format(size=size, gym_id=variant.gym_id, dynamics=dynamics)
    elif variant.kind is Kind.CLIFFWALKING:
        head = _CLIFF
    else:
        head = _TAXI
    invalid = _INVALID.format(actions=", ".join(variant.actions))
    return f"{head}\n{invalid}\n{FOOTER}"
