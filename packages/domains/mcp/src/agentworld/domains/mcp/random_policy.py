"""``random``: random tools of the server (read from the initial tool listing) with plausible,
random or malformed arguments, some invalid JSON and unknown tools; 3-10 calls. Half of the
string and integer arguments reuse a value an earlier response showed (a title, an id), so
random play also reads back and changes what it made."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from agentworld.core.domain_base import PolicyBase
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.mcp.calls import parse_signature, render_call, tool_action
from agentworld.domains.mcp.checks import leaves
from agentworld.domains.mcp.tasks import CITIES, PEOPLE, TAGS, TOPICS, WORDS

STRINGS = TOPICS + WORDS + PEOPLE + CITIES + TAGS + ("orders", "2025-03-14", "", "a b c")


class RandomPolicy(PolicyBase):
    """Random calls (see the module docstring).

    Args:
        seed: Seed; :meth:`reset` re-seeds.
        malformed: Probability that a call is malformed (invalid JSON, an unknown tool or
            arguments of the wrong type).
    """

    name = "random"

    def __init__(self, seed: int = 0, malformed: float = 0.25) -> None:
        if not 0.0 <= malformed <= 1.0:
            raise ValueError(f"malformed must be a probability in [0, 1], got {malformed}")
        self.malformed = malformed
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Re-seed; the episode length is drawn at the first step."""
        self.rng = random.Random(f"mcp-random-{seed}")
        self._length = 0

    def _value(self, kind: str, seen: list[Any]) -> Any:
        rng = self.rng
        if ("string" in kind or "integer" in kind) and rng.random() < 0.5:
            wanted = int if "integer" in kind else str
            same = [v for v in seen if type(v) is wanted]
            if same:
                return rng.choice(same)
        if "integer" in kind:
            return rng.randint(0, 6)
        if "number" in kind:
            return round(rng.uniform(0, 300), 1)
        if "boolean" in kind:
            return rng.random() < 0.5
        if "array" in kind:
            return rng.sample(STRINGS, rng.randint(1, 3))
        if "object" in kind:
            return {rng.choice(("customer", "city", "amount", "name", "status")): rng.choice(STRINGS)}
        return rng.choice(STRINGS)

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """A random call, or ``None`` once the episode's drawn length is reached."""
        if len(history) <= 1:
            self._length = self.rng.randint(3, 10)
        if sum(isinstance(h, Action) for h in history) >= self._length:
            return None
        tools = [t for t in map(parse_signature, history[0].text.splitlines()) if t is not None]
        rng = self.rng
        if not tools or rng.random() < self.malformed:
            return self._malformed(tools)
        name, args = rng.choice(tools)
        seen = _seen(history)
        arguments = {arg: self._value(kind, seen) for arg, kind, required in args
                     if required or rng.random() < 0.4}
        return tool_action(name, arguments)

    def _malformed(self, tools: list[tuple[str, list[tuple[str, str, bool]]]]) -> Action:
        rng = self.rng
        roll = rng.random()
        if roll < 0.3 or not tools:
            name = rng.choice([t[0] for t in tools] or ["list"])
            return Action(text=rng.choice((f'{{"name": "{name}", "arguments": {{',
                                           f"{name}()", f'{{"tool": "{name}"}}')))
        if roll < 0.55:
            return tool_action(rng.choice(("get_weather", "delete_all", "open_file")), {})
        name, args = rng.choice(tools)
        wrong = {arg: rng.choice(([1, 2], {"x": None}, None, 3.5, "x" * 3)) for arg, _, _ in args}
        return Action(text=render_call(name, wrong), name=name, arguments=wrong)


def _seen(history: Sequence[Observation | Action]) -> list[Any]:
    """Scalar values (strings up to 40 characters, integers) shown by the JSON responses so far."""
    out: list[Any] = []
    for item in history[1:]:
        if isinstance(item, Action):
            continue
        try:
            value = json.loads(item.text)
        except json.JSONDecodeError:
            continue
        out += [v for _, v in leaves(value)
                if (type(v) is str and 0 < len(v) <= 40) or type(v) is int]
    return out
