"""``TtyEnvOptions``: what ``agentworld collect --domain tty --set KEY=VALUE`` may give
:class:`~agentworld.domains.tty.env.TtyEnv` (:mod:`agentworld.core.options`)."""

from __future__ import annotations

from typing import Literal

from agentworld.core.options import EnvOptions, Field


class TtyEnvOptions(EnvOptions):
    """Options of the tty domain's real environment.

    Attributes:
        max_steps: Keystroke actions before the episode is truncated.
        sandbox: Sandbox kind (default: the detected one).
        root_parent: Host directory under which episode roots are made.
    """

    max_steps: int = Field(30, ge=1)
    sandbox: Literal["bubblewrap", "unshare"] | None = None
    root_parent: str | None = None
