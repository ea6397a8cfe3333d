"""The one adapter at the environment boundary: a Gymnasium ``Text``-space env behind ``Action``.

Every environment agentworld steps receives an :class:`~agentworld.core.types.Action`
(:class:`~agentworld.core.protocols.Environment`). A Gymnasium environment whose action space is
``gymnasium.spaces.Text`` takes a ``str`` instead; wrap it once with :class:`TextActions` (a
domain's ``make_env`` does, so callers never see the difference).
"""

from __future__ import annotations

from typing import Any

import gymnasium

from agentworld.core.protocols import PrivilegedEnvironment
from agentworld.core.types import Action


class TextActions(gymnasium.ActionWrapper):
    """A Gymnasium env whose ``step`` takes a ``str`` (a ``Text`` action space) as one whose
    ``step`` takes an :class:`Action`: Gymnasium's ``ActionWrapper`` whose :meth:`action` is
    the action's ``text``. ``reset`` and ``close`` pass through, ``privileged_state`` too
    (``None`` when ``env`` has none); the spaces are ``env``'s; ``env`` stays reachable as
    :attr:`env`.

    Raises:
        TypeError: (from ``step``) the action is not an :class:`Action`.
    """

    def __init__(self, env: gymnasium.Env[Any, str]) -> None:
        super().__init__(env)

    def action(self, action: Action) -> str:
        """The text ``env`` is stepped with: ``action.text``."""
        if not isinstance(action, Action):
            raise TypeError(f"step takes an Action, got {type(action).__name__}")
        return action.text

    def privileged_state(self) -> dict[str, Any] | None:
        """``env``'s privileged state (:class:`PrivilegedEnvironment`), else ``None``."""
        if isinstance(self.env, PrivilegedEnvironment):
            return self.env.privileged_state()
        return None


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
