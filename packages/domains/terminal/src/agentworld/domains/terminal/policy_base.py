"""Shared helpers of the collection policies: seeding, cwd tracking, paths."""

from __future__ import annotations

import posixpath
import random
import shlex
from collections.abc import Sequence

from agentworld.core.types import Action, Observation
from agentworld.domains.terminal.prompt import HOME, absolute_cwd, split_prompt


class SeededPolicy:
    """Base of the terminal policies: a private ``random.Random``.

    Args:
        seed: Initial seed; :meth:`reset` re-seeds (the core collector calls
            ``policy.reset(seed)`` before each episode when it exists).
    """

    name = "base"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(f"{self.name}-{seed}")

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the policy (``None``: keep the current random state)."""
        if seed is not None:
            self.rng = random.Random(f"{self.name}-{seed}")


def current_cwd(history: Sequence[Observation | Action]) -> str:
    """Absolute cwd shown by the last observation's prompt (the home when unknown)."""
    for item in reversed(history):
        if not isinstance(item, Action):  # an Observation, or an env's ObservationText
            state = getattr(item, "state", None)
            if state and isinstance(state.get("cwd"), str):
                return state["cwd"]
            _, prompt = split_prompt(str(getattr(item, "text", item)))
            return absolute_cwd(prompt.cwd) if prompt else HOME
    return HOME


def rel(path: str, cwd: str) -> str:
    """``path`` (relative to the home directory) as seen from absolute ``cwd``."""
    target = posixpath.normpath(posixpath.join(HOME, path))
    return posixpath.relpath(target, cwd)


def quote(text: str) -> str:
    """Single-quote ``text`` for the shell the way a person would type it."""
    return f"'{text}'" if "'" not in text else shlex.quote(text)


def steps_taken(history: Sequence[Observation | Action]) -> int:
    """Number of actions in ``history``."""
    return sum(isinstance(item, Action) for item in history)
