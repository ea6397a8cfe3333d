"""The Gymnasium toy-text environments offered as domains, one :class:`Variant` per name.

Action indices follow each environment's Gymnasium source
(``gymnasium/envs/toy_text/{frozen_lake,cliffwalking,taxi}.py``): FrozenLake
``0 left, 1 down, 2 right, 3 up``; CliffWalking ``0 up, 1 right, 2 down,
3 left``; Taxi ``0 south, 1 north, 2 east, 3 west, 4 pickup, 5 dropoff``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Kind(str, Enum):
    """Environment family of a variant."""

    FROZENLAKE = "frozenlake"
    TAXI = "taxi"
    CLIFFWALKING = "cliffwalking"


MOVES = ("left", "down", "right", "up")
TAXI_ACTIONS = ("south", "north", "east", "west", "pickup", "dropoff")


@dataclass(frozen=True, slots=True)
class Variant:
    """One domain name and the Gymnasium environment behind it.

    Attributes:
        name: Domain name (``"frozenlake-8x8-slippery"``).
        kind: Environment family.
        gym_id: Registered Gymnasium id (its ``max_episode_steps`` is the time limit).
        kwargs: Keyword arguments for ``gymnasium.make``.
        actions: Action words in the order agents should list them.
        indices: Action word -> Gymnasium action index.
        slippery: Whether moves are stochastic.
    """

    name: str
    kind: Kind
    gym_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    actions: tuple[str, ...] = MOVES
    indices: dict[str, int] = field(default_factory=dict)
    slippery: bool = False

    @property
    def instruction(self) -> str:
        """The agent instruction for tasks without passenger details."""
        if self.kind is Kind.FROZENLAKE:
            return "Reach the goal G without falling into a hole."
        if self.kind is Kind.CLIFFWALKING:
            return "Walk from S to the goal G without stepping into the cliff C."
        return "Pick up the passenger and drop them at the destination."


def _frozenlake(size: str, slippery: bool) -> Variant:
    name = f"frozenlake-{size}" + ("-slippery" if slippery else "")
    gym_id = "FrozenLake-v1" if size == "4x4" else "FrozenLake8x8-v1"
    return Variant(
        name=name,
        kind=Kind.FROZENLAKE,
        gym_id=gym_id,
        kwargs={"map_name": size, "is_slippery": slippery},
        indices={"left": 0, "down": 1, "right": 2, "up": 3},
        slippery=slippery,
    )


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        _frozenlake("4x4", False),
        _frozenlake("4x4", True),
        _frozenlake("8x8", False),
        _frozenlake("8x8", True),
        Variant(
            name="taxi",
            kind=Kind.TAXI,
            gym_id="Taxi-v4",
            actions=TAXI_ACTIONS,
            indices={word: i for i, word in enumerate(TAXI_ACTIONS)},
        ),
        Variant(
            name="cliffwalking",
            kind=Kind.CLIFFWALKING,
            gym_id="CliffWalking-v1",
            indices={"up": 0, "right": 1, "down": 2, "left": 3},
        ),
    )
}


def get_variant(name: str) -> Variant:
    """The variant called ``name``.

    Raises:
        KeyError: unknown name; the message lists the valid ones.
    """
    try:
        return VARIANTS[name]
    except KeyError:
        raise KeyError(f"unknown classic domain {name!r}; valid: {', '.join(VARIANTS)}") from None
