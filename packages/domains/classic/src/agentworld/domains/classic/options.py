"""``ClassicEnvOptions``: what ``agentworld collect --domain frozenlake-4x4 --set KEY=VALUE`` may
give :class:`~agentworld.domains.classic.env.ClassicEnv` (:mod:`agentworld.core.options`)."""

from __future__ import annotations

from typing import Literal

from agentworld.core.options import EnvOptions


class ClassicEnvOptions(EnvOptions):
    """Options of a classic domain's real environment.

    Attributes:
        render_mode: ``"ansi"``: ``render()`` returns the board's text.
    """

    render_mode: Literal["ansi"] | None = None
