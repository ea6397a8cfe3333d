"""``UserSweDomain``: the swe domain on the user's own repository (``--set repo=PATH``), whose
tasks are mutations of its library modules that its own tests catch
(:mod:`agentworld.domains.swe.user_tasks`); never the built-in projects' tasks. It is defined
beside :class:`~agentworld.domains.swe.domain.SweDomain`, whose ``for_environment`` builds it
(one module, so neither imports the other); importable from here."""

from __future__ import annotations

from agentworld.domains.swe.domain import UserSweDomain

__all__ = ["UserSweDomain"]
