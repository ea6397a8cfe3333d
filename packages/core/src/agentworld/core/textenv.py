"""The one adapter at the environment boundary: a Gymnasium ``Text``-space env behind ``Action``.

Every environment agentworld steps receives an :class:`~agentworld.core.types.Action`
(:class:`~agentworld.core.protocols.Environment`). A Gymnasium environment whose action space is
``gymnasium.spaces.Text`` takes a ``str`` instead; wrap it once with :class:`TextActions` (a
domain's ``make_env`` does, so callers never see the difference).
"""

from __future__ import annotations

from typing import Any

from agentworld.core.protocols import PrivilegedEnvironment
from agentworld.core.types import Action


class TextActions:
    """``env`` (whose ``step`` takes a ``str``) as an environment whose ``step`` takes an
    :class:`Action`: the action's ``text`` is sent. ``reset``, ``close`` and
    ``privileged_state`` (``None`` when ``env`` has none) pass through; ``env`` stays
    reachable as :attr:`env`.

    Raises:
        TypeError: (from ``step``) the action is not an :class:`Action`.
    """

    def __init__(self, env: Any) -> None:
        self.env = env

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Action) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, Action):
            raise TypeError(f"step takes an Action, got {type(action).__name__}")
        return self.env.step(action.text)

    def privileged_state(self) -> dict[str, Any] | None:
        if isinstance(self.env, PrivilegedEnvironment):
            return self.env.privileged_state()
        return None

    def close(self) -> None:
        self.env.close()


def action_text(action: Action | str) -> str:
    """The text a Gymnasium ``Text``-space env types: ``action.text``, or ``action`` itself.

    Raises:
        TypeError: ``action`` is neither a ``str`` nor an :class:`Action`.
    """
    if isinstance(action, Action):
        return action.text
    if isinstance(action, str):
        return action
    raise TypeError(f"action must be a str or Action, got {type(action).__name__}")
