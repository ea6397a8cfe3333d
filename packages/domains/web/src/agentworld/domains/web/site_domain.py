"""``SiteDomain``: the web domain on the user's own site (``--set url=`` or ``--set site=``),
whose tasks come from the site's pages and whose policies explore it; never the built-in
apps' tasks."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from agentworld.core.types import Action, Task
from agentworld.domains.web.actions import ActionError, parse
from agentworld.domains.web.domain import WebDomain
from agentworld.domains.web.env import WebEnv
from agentworld.domains.web.policies import RandomPolicy
from agentworld.domains.web.site_explorer import SiteExplorer
from agentworld.domains.web.site_map import Page, origin
from agentworld.domains.web.site_target import SiteTarget
from agentworld.domains.web.site_tasks import SITE_KINDS, SiteTaskSampler

SITE_PROMPT = """You simulate a web browser (headless Chromium) on one web site, {site}: its own pages, links and forms; every other site is blocked.

Given the agent's action, reply with the next observation exactly as the browser shows it:
URL: the page's URL
Focused element: [bid] of the focused element, or none
Error: one line, only when the action failed (malformed action, unknown bid, blocked off-site navigation, timeout)
then a blank line and the page's accessibility tree, one node a line, indented by tabs: [bid] role 'name' then properties (value='...', selected='true', checked='false', focused, required); nodes without a bid (RootWebArea, StaticText) have none. Element bids are numbered in document order and kept while a page lives.

Actions (BrowserGym): click(bid), fill(bid, text), select_option(bid, option), press(bid, key), scroll(dx, dy), goto(url), go_back(), go_forward(), noop(wait_ms)."""


class SiteDomain(WebDomain):
    """:class:`~agentworld.domains.web.domain.WebDomain` on the user's site.

    Args:
        url: The user's web app (``http://HOST:PORT/``).
        site: A folder of static files (exclusive with ``url``).

    Raises:
        ValueError: at the first :meth:`tasks` or :meth:`policies`, a site whose start page
            does not load (``TargetError``) or that gives no task.
    """

    def __init__(self, url: str | None = None, site: Path | str | None = None) -> None:
        self.url, self.site = url, (None if site is None else str(site))

    @functools.cached_property
    def _map(self) -> tuple[list[Page], str]:
        target = SiteTarget(self.url, self.site)
        try:
            return target.pages(), target.start_url
        finally:
            target.close()

    def system_prompt(self, task: Task | None) -> str:
        """The world-model system prompt naming the site, plus the agent's task when known."""
        prompt = SITE_PROMPT.format(site=self._map[1])
        return prompt if task is None else f"{prompt}\n\nTask given to the agent: {task.instruction}"

    def make_env(self, **kwargs: Any) -> WebEnv:
        """A real :class:`WebEnv` on the site (``kwargs`` go to its constructor)."""
        kwargs.setdefault("url", self.url)
        kwargs.setdefault("site", self.site)
        if kwargs["url"] is not None:
            kwargs.pop("site")
        return WebEnv(**kwargs)

    def tasks(self) -> SiteTaskSampler:
        """Tasks from the site's pages (:mod:`agentworld.domains.web.site_tasks`)."""
        pages, start = self._map
        return SiteTaskSampler(pages, start)

    def policies(self) -> dict[str, Any]:
        """Fresh ``scripted`` (goal-directed explorer), ``explorer`` and ``random`` policies."""
        pages, _ = self._map
        return {"scripted": SiteExplorer(pages, goal=True), "explorer": SiteExplorer(pages),
                "random": RandomPolicy()}

    def command_families(self, action: Action) -> set[str]:
        """The action name, plus ``goto:off-host`` for a navigation off the site and
        ``press:KEY`` for a key press."""
        try:
            parsed = parse(action.text)
        except ActionError:
            return {"invalid"}
        out = {parsed.name}
        if parsed.name == "goto" and origin(parsed.arguments["url"]) != origin(self._map[1]):
            out.add("goto:off-host")
        if parsed.name == "press":
            out.add(f"press:{parsed.arguments['key_comb']}")
        return out

    def describe(self) -> dict[str, str]:
        return {
            "environment": f"real: headless Chromium on the user's site {self.url or self.site}",
            "observation": "URL, focused element, accessibility tree with bids (BrowserGym)",
            "task kinds": ", ".join(SITE_KINDS),
            "policies": "scripted (goal-directed explorer), explorer, random",
        }
