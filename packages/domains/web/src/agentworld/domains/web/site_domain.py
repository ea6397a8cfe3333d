"""``SiteDomain``: the web domain on the user's own site (``--set url=`` or ``--set site=``),
whose tasks come from the site's pages and whose policies explore it; never the built-in apps'
tasks. It is defined beside :class:`~agentworld.domains.web.domain.WebDomain`, whose
``for_environment`` builds it (one module, so neither imports the other); importable from here."""

from __future__ import annotations

from agentworld.domains.web.domain import SITE_PROMPT, SiteDomain

__all__ = ["SITE_PROMPT", "SiteDomain"]
