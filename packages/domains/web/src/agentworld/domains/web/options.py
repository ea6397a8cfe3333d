"""``WebEnvOptions``: what ``agentworld collect --domain web --set KEY=VALUE`` may give
:class:`~agentworld.domains.web.env.WebEnv` (:mod:`agentworld.core.options`)."""

from __future__ import annotations

from agentworld.core.options import EnvOptions, Field


class WebEnvOptions(EnvOptions):
    """Options of the web domain's real environment.

    Attributes:
        timeout_s: Seconds a page load or action may take, > 0.
        chromium: The Chromium executable (default: the one found on this machine).
    """

    timeout_s: float = Field(5.0, gt=0)
    chromium: str | None = None
