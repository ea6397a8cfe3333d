"""``SweEnvOptions``: what ``agentworld collect --domain swe --set KEY=VALUE`` may give
:class:`~agentworld.domains.swe.env.SweEnv` (:mod:`agentworld.core.options`)."""

from __future__ import annotations

from typing import Literal

from agentworld.core.options import EnvOptions, Field


class SweEnvOptions(EnvOptions):
    """Options of the swe domain's real environment.

    Attributes:
        max_steps: Tool calls before the episode is truncated.
        sandbox: Sandbox kind of the terminal it runs in (default: the detected one).
    """

    max_steps: int = Field(30, ge=1)
    sandbox: Literal["bubblewrap", "unshare"] | None = None
