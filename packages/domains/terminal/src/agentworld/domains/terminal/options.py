"""``TerminalEnvOptions``: what ``agentworld collect --domain terminal --set KEY=VALUE`` may give
:class:`~agentworld.domains.terminal.env.TerminalEnv` (:mod:`agentworld.core.options`)."""

from __future__ import annotations

from typing import Literal

from agentworld.core.options import EnvOptions, Field


class TerminalEnvOptions(EnvOptions):
    """Options of the terminal's real environment.

    Attributes:
        max_steps: Steps before the episode is truncated.
        sandbox: Sandbox kind (default: the detected one, ``AGENTWORLD_TERMINAL_SANDBOX``).
        root_parent: Host directory under which episode roots are made (default: a private
            temporary directory).
        render_mode: ``"ansi"``: ``render()`` returns the last screen text.
    """

    max_steps: int = Field(50, ge=1)
    sandbox: Literal["bubblewrap", "unshare"] | None = None
    root_parent: str | None = None
    render_mode: Literal["ansi"] | None = None
