"""``WebEnvOptions``: what ``agentworld collect --domain web --set KEY=VALUE`` may give
:class:`~agentworld.domains.web.env.WebEnv` (:mod:`agentworld.core.options`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import PlainSerializer, field_validator, model_validator

from agentworld.core.options import EnvOptions, Field

#: A path option: given and checked as a path, passed on (and recorded) as its string.
PathOption = Annotated[Path, PlainSerializer(str, return_type=str)]


class WebEnvOptions(EnvOptions):
    """Options of the web domain's real environment.

    Attributes:
        timeout_s: Seconds a page load or action may take, > 0.
        chromium: The Chromium executable (default: the one found on this machine).
        url: The user's own web app, ``http://HOST:PORT/``: the only origin the browser may
            reach, with tasks synthesised from its pages
            (:mod:`agentworld.domains.web.site_tasks`). One that does not answer is refused
            here, before any file is written.
        site: A folder of the user's static files (with an ``index.html`` or another
            ``.html``), served on loopback as ``http://site.test/``; exclusive with ``url``.
    """

    timeout_s: float = Field(5.0, gt=0)
    chromium: str | None = None
    url: str | None = None
    site: PathOption | None = None

    @field_validator("url")
    @classmethod
    def _answers(cls, url: str | None) -> str | None:
        from agentworld.domains.web.site_target import check_url

        return None if url is None else check_url(url)  # TargetError (a ValueError)

    @field_validator("site")
    @classmethod
    def _has_pages(cls, site: Path | None) -> Path | None:
        from agentworld.domains.web.site_target import check_site

        return None if site is None else check_site(site)

    @model_validator(mode="after")
    def _one_target(self) -> WebEnvOptions:
        if self.url is not None and self.site is not None:
            raise ValueError("give url= or site=, not both")
        return self
