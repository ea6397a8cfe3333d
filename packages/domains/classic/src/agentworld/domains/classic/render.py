"""Observation text of the classic domains: our own plain-text rendering, and its parser.

Gymnasium's ``ansi`` render marks the FrozenLake agent only with a colour
code, so the grid is built here from the map and the integer state. Layout::

    [invalid action: jump; valid: left, down, right, up]   only after an unknown word
    agent: row 1, col 1                                    the agent's (taxi's) cell
    SFFF                                                   the map, agent drawn over its cell
    FAFH
    FFFH
    HFFG
    [passenger: at R, destination: G]                      Taxi only
    reward: 0                                              reward of the last step (0 at reset)
    [status: fell in a hole]                               only when the episode terminated

Legends: FrozenLake ``S`` start, ``F`` frozen, ``H`` hole, ``G`` goal, ``A``
agent; CliffWalking ``.`` free, ``S`` start, ``C`` cliff, ``G`` goal, ``A``
agent; Taxi keeps Gymnasium's map (``|`` wall, ``:`` no wall, ``R G Y B``
stops) without its top and bottom border lines, the taxi drawn as ``T``
(``@`` while carrying the passenger). The text determines the state
(Markov), so a world model needs no history beyond the last observation.

The position line comes before the map on purpose: a world model then writes the
new cell as two small numbers (the old ones plus the move) before drawing the map,
which it only has to copy with the mark at that cell; without it, a small model
must find the mark inside a grid of look-alike tokens and tends to drop it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from agentworld.domains.classic.variants import Kind, Variant, get_variant

AGENT, TAXI, TAXI_FULL = "A", "T", "@"
STOPS = "RGYB"
TAXI_STOPS = ((0, 0), (0, 4), (4, 0), (4, 3))  # gymnasium taxi.py ``self.locs``
IN_TAXI = "taxi"
HOLE, GOAL, DELIVERED = "fell in a hole", "reached the goal", "delivered"
_PASSENGER = re.compile(r"passenger: (?:at ([RGYB])|in taxi), destination: ([RGYB])")
_FLOAT = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")
_POSITION = re.compile(r"(agent|taxi): row (\d+), col (\d+)")


@dataclass(slots=True)
class Board:
    """Decoded state of one observation.

    Attributes:
        s: Gymnasium integer state.
        row: Agent (taxi) row, 0 at the top.
        col: Agent (taxi) column, 0 at the left.
        reward: Reward of the step that led here (0 at reset and after an invalid action).
        terminated: The episode ended here (goal, hole, delivery).
        passenger: Taxi only: stop letter where the passenger waits, or ``"taxi"``.
        destination: Taxi only: destination stop letter.
        invalid: The unknown action word that produced this observation, if any.
    """

    s: int
    row: int
    col: int
    reward: float = 0.0
    terminated: bool = False
    passenger: str | None = None
    destination: str | None = None
    invalid: str | None = None

    def as_state(self) -> dict[str, Any]:
        """JSON-ready dict for ``Observation.state``."""
        state: dict[str, Any] = {
            "s": self.s,
            "row": self.row,
            "col": self.col,
            "reward": self.reward,
            "terminated": self.terminated,
        }
        if self.passenger is not None:
            state.update(passenger=self.passenger, destination=self.destination)
        if self.invalid is not None:
            state["invalid"] = self.invalid
        return state


def base_map(variant: Variant) -> tuple[str, ...]:
    """The map rows without the agent (FrozenLake and Taxi maps from the Gymnasium source)."""
    return _base_map(variant.name)


@functools.cache
def _base_map(name: str) -> tuple[str, ...]:
    variant = get_variant(name)
    if variant.kind is Kind.FROZENLAKE:
        from gymnasium.envs.toy_text.frozen_lake import MAPS

        return tuple(MAPS[variant.kwargs["map_name"]])
    if variant.kind is Kind.TAXI:
        from gymnasium.envs.toy_text.taxi import MAP

        return tuple(MAP[1:-1])
    return ("." * 12, "." * 12, "." * 12, "S" + "C" * 10 + "G")


def taxi_decode(s: int) -> tuple[int, int, int, int]:
    """``(taxi_row, taxi_col, passenger_index, destination_index)`` of a Taxi state.

    Inverse of ``s = ((row * 5 + col) * 5 + passenger) * 4 + destination``
    (``TaxiEnv.encode`` in gymnasium ``envs/toy_text/taxi.py``); passenger
    index 4 means in the taxi.
    """
    assert 0 <= s < 500, s
    s, dest = divmod(s, 4)
    s, passenger = divmod(s, 5)
    row, col = divmod(s, 5)
    return row, col, passenger, dest


def taxi_encode(row: int, col: int, passenger: int, dest: int) -> int:
    """Inverse of :func:`taxi_decode`."""
    return ((row * 5 + col) * 5 + passenger) * 4 + dest


def decode(variant: Variant, s: int, reward: float = 0.0, terminated: bool = False) -> Board:
    """The :class:`Board` of integer state ``s``."""
    if variant.kind is Kind.TAXI:
        row, col, p, d = taxi_decode(s)
        passenger = IN_TAXI if p == 4 else STOPS[p]
        return Board(s, row, col, float(reward), terminated, passenger, STOPS[d])
    width = len(base_map(variant)[0])
    row, col = divmod(s, width)
    return Board(s, row, col, float(reward), terminated)


def status(variant: Variant, board: Board) -> str | None:
    """What ended the episode at ``board`` (``None`` when this state is not terminal)."""
    if variant.kind is Kind.TAXI:
        return DELIVERED if board.passenger == board.destination else None
    cell = base_map(variant)[board.row][board.col]
    if cell == "G":
        return GOAL
    return HOLE if cell == "H" else None


def render(variant: Variant, board: Board) -> str:
    """The observation text of ``board`` (layout in the module docstring)."""
    rows = list(base_map(variant))
    lines = []
    if board.invalid is not None:
        lines.append(f"invalid action: {board.invalid}; valid: {', '.join(variant.actions)}")
    lines.append(f"{position_name(variant)}: row {board.row}, col {board.col}")
    if variant.kind is Kind.TAXI:
        x = 2 * board.col + 1
        mark = TAXI_FULL if board.passenger == IN_TAXI else TAXI
        rows[board.row] = rows[board.row][:x] + mark + rows[board.row][x + 1 :]
        lines += rows
        where = "in taxi" if board.passenger == IN_TAXI else f"at {board.passenger}"
        lines.append(f"passenger: {where}, destination: {board.destination}")
    else:
        r, c = board.row, board.col
        rows[r] = rows[r][:c] + AGENT + rows[r][c + 1 :]
        lines += rows
    lines.append(f"reward: {board.reward:g}")
    end = status(variant, board)
    if board.terminated and end is not None:
        lines.append(f"status: {end}")
    return "\n".join(lines)


def position_name(variant: Variant) -> str:
    """``"taxi"`` for Taxi, else ``"agent"``: the key of the position line."""
    return "taxi" if variant.kind is Kind.TAXI else "agent"


def parse(variant: Variant, text: str) -> Board | None:
    """The :class:`Board` an observation text shows, or ``None`` when it is not our rendering.

    Requires the position line, the map's shape (rows of the right number and width),
    exactly one agent (taxi) mark, on the cell the position line names, a ``reward:`` line with a number, for
    Taxi a passenger line agreeing with the taxi mark, and no unknown lines.
    ``terminated`` is structural (agent on ``G`` or ``H``, passenger at its
    destination); a ``status:`` line that disagrees with it makes the text
    unparseable. Other map cells are not checked (the scorer does that).
    """
    lines = text.strip("\n").split("\n")
    invalid = None
    if lines and lines[0].startswith("invalid action: "):
        invalid = lines.pop(0)[len("invalid action: ") :].split(";")[0]
    position = _POSITION.fullmatch(lines.pop(0)) if lines else None
    if position is None or position.group(1) != position_name(variant):
        return None
    rows = base_map(variant)
    grid, rest = lines[: len(rows)], lines[len(rows) :]
    if len(grid) != len(rows) or any(len(g) != len(r) for g, r in zip(grid, rows)):
        return None
    taxi = variant.kind is Kind.TAXI
    marks = (TAXI, TAXI_FULL) if taxi else (AGENT,)
    found = [(i, j, ch) for i, g in enumerate(grid) for j, ch in enumerate(g) if ch in marks]
    if len(found) != 1 or (taxi and found[0][1] % 2 == 0):
        return None
    row, x, mark = found[0]
    col = (x - 1) // 2 if taxi else x
    if (row, col) != (int(position.group(2)), int(position.group(3))):
        return None
    fields: dict[str, str] = {}
    for line in rest:
        key, sep, _value = line.partition(": ")
        if not sep or key in fields or key not in ("passenger", "reward", "status"):
            return None
        fields[key] = line
    reward_text = fields.get("reward", "")[len("reward: ") :]
    if not _FLOAT.fullmatch(reward_text):
        return None
    if taxi:
        match = _PASSENGER.fullmatch(fields.get("passenger", ""))
        if match is None or (mark == TAXI_FULL) != (match.group(1) is None):
            return None
        p = STOPS.index(match.group(1)) if match.group(1) else 4
        board = decode(variant, taxi_encode(row, col, p, STOPS.index(match.group(2))))
    elif "passenger" in fields:
        return None
    else:
        board = decode(variant, row * len(rows[0]) + col)
    board.reward, board.invalid = float(reward_text), invalid
    end = status(variant, board)
    board.terminated = end is not None
    if fields.get("status", f"status: {end}") != f"status: {end}":
        return None
    return board
