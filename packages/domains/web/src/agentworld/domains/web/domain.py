"""``WebDomain``: the web domain as the framework sees it."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentworld.core.domain_base import DomainBase
from agentworld.core.types import Action, Episode, Observation, Step, Task
from agentworld.domains.web import explain as _explain
from agentworld.domains.web import scorer
from agentworld.domains.web.actions import ACTIONS, ActionError, parse
from agentworld.domains.web.chromium_sandbox import sandbox_state
from agentworld.domains.web.env import WebEnv, parse_observation
from agentworld.domains.web.options import WebEnvOptions
from agentworld.domains.web.policies import RandomPolicy, make_policies
from agentworld.domains.web.site_explorer import SiteExplorer
from agentworld.domains.web.site_map import Page, origin
from agentworld.domains.web.site_target import SiteTarget
from agentworld.domains.web.site_tasks import SITE_KINDS, SiteTaskSampler
from agentworld.domains.web.tasks import WebTaskSampler, available_kinds

SYSTEM_PROMPT = """You simulate a web browser (headless Chromium) on three local web apps: a shop (http://shop.test: catalog, product pages with a quantity select, a cart, a validated checkout form, order confirmations), a forum (http://forum.test: posts, replies, a validated new-post form) and a to-do list (http://todo.test: items with Complete/Delete buttons, a validated form with a YYYY-MM-DD due date and a priority), and MiniWoB++ task pages (http://miniwob.test/miniwob/TASK.html).

Given the agent's action, reply with the next observation exactly as the browser shows it:
URL: the page's URL
Focused element: [bid] of the focused element, or none
Error: one line, only when the action failed (malformed action, unknown bid, blocked off-host navigation, timeout)
then a blank line and the page's accessibility tree, one node a line, indented by tabs: [bid] role 'name' then properties (value='...', selected='true', expanded='false', focused, required); nodes without a bid (RootWebArea, StaticText, ListMarker) have none. Element bids are numbered in document order and kept while a page lives.

Actions (BrowserGym): click(bid), fill(bid, text), select_option(bid, option), press(bid, key), scroll(dx, dy), goto(url), go_back(), go_forward(), noop(wait_ms). Only these hosts are reachable."""


class WebDomain(DomainBase):
    """The ``web`` domain (:class:`agentworld.core.domain_base.DomainBase`)."""

    name = "web"
    version = "0.1.0"
    env_options = WebEnvOptions
    defines_rewards = False

    def system_prompt(self, task: Task | None) -> str:
        """The world-model system prompt, plus the agent's task when known."""
        return SYSTEM_PROMPT if task is None else f"{SYSTEM_PROMPT}\n\nTask given to the agent: {task.instruction}"

    def for_environment(self, options: dict[str, Any]) -> WebDomain | None:
        """With ``url`` or ``site`` (the user's own site), a
        :class:`SiteDomain` whose tasks and policies are
        the site's, checked here (its start page loads, it gives a task); else ``None``.

        Raises:
            ValueError: the site's start page does not load, or it gives no task.
        """
        if options.get("url") is None and options.get("site") is None:
            return None
        domain = SiteDomain(options.get("url"), options.get("site"))
        domain.tasks()
        return domain

    def make_env(self, **kwargs: Any) -> WebEnv:
        """A real :class:`WebEnv` (``kwargs`` go to its constructor); the browser starts at
        the first reset.

        Raises:
            agentworld.core.errors.EnvironmentUnavailableError: at reset, no Chromium.
        """
        return WebEnv(**kwargs)

    def tasks(self) -> WebTaskSampler:
        """The seeded task sampler (kinds :func:`~agentworld.domains.web.tasks.available_kinds`)."""
        return WebTaskSampler()

    def policies(self) -> dict[str, Any]:
        """Fresh ``scripted`` and ``random`` policies (and ``llm`` with an endpoint)."""
        return make_policies()

    def score(self, predicted: str, reference: Observation) -> float:
        """Node-level F1 in [0, 1] (:func:`agentworld.domains.web.scorer.score`)."""
        return scorer.score(predicted, reference)

    def action_type(self, action: Action) -> str:
        """The action's name (``click``, ``fill``, ...); for text that does not parse, its
        first word when that is an action name (AgentWorldBench rows imported from other
        browsers write ``click [42]``), else ``invalid``."""
        try:
            return parse(action.text).name
        except ActionError:
            match = re.match(r"\s*(\w+)", action.text)
            return match.group(1) if match and match.group(1) in ACTIONS else "invalid"

    def command_families(self, action: Action) -> set[str]:
        """The action name, plus ``goto:off-host`` for a navigation outside the apps and
        ``press:KEY`` for a key press."""
        try:
            parsed = parse(action.text)
        except ActionError:
            return {"invalid"}
        out = {parsed.name}
        if parsed.name == "goto" and self.off_host(parsed.arguments["url"]):
            out.add("goto:off-host")
        if parsed.name == "press":
            out.add(f"press:{parsed.arguments['key_comb']}")
        return out

    def off_host(self, url: str) -> bool:
        """Whether ``url`` is outside the environment's sites (here: the built-in apps)."""
        return not any(url.startswith(f"http://{h}/") for h in
                       ("shop.test", "forum.test", "todo.test", "miniwob.test"))

    def explain(self, step: Step, previous_state: dict[str, Any] | None,
                history: Any = ()) -> str:
        """A rationale from the real change (:func:`agentworld.domains.web.explain.explain`)."""
        return _explain.explain(step, previous_state)

    def explain_text(self, action: str, observation: str, history: Any = ()) -> str:
        """The first sentence of :meth:`explain` (the action and its target), from the previous
        page's text (:func:`agentworld.domains.web.explain.explain_text`)."""
        return _explain.explain_text(action, observation)

    def consistency_turns(self, episode: Episode) -> list[int]:
        """Steps whose observation shows what the episode itself changed: a page of an app
        whose state an earlier step changed (cart, order, post, reply, to-do), or a field
        holding a value an earlier step filled in."""
        out: list[int] = []
        apps = {"cart": "shop.test", "orders": "shop.test", "posts": "forum.test",
                "items": "todo.test"}
        filled: set[str] = set()
        changed: set[str] = set()  # hosts whose app state an earlier step changed
        previous = episode.initial_observation.state or {}
        for i, step in enumerate(episode.steps):
            state = step.observation.state or {}
            now = {host for key, host in apps.items() if state.get(key) != previous.get(key)}
            fields, tree = parse_observation(step.observation.text)
            host = urlsplit(fields.get("URL", "")).hostname
            if (host in changed and host not in now) or any(f"value={v!r}" in tree for v in filled):
                out.append(i)
            changed |= now
            try:
                parsed = parse(step.action.text)
                if parsed.name == "fill" and parsed.arguments["value"]:
                    filled.add(parsed.arguments["value"])
            except ActionError:
                pass
            previous = state
        return out

    def is_deterministic(self, action: Action, reference: Observation | None = None) -> bool:
        """A malformed action or a blocked navigation repeats the page with an error line."""
        return "invalid" in self.command_families(action) or "goto:off-host" in self.command_families(action)

    def describe(self) -> dict[str, str]:
        return {
            "environment": "real: headless Chromium (Playwright, Debian's chromium) on local "
                           "apps served on 127.0.0.1 (shop, forum, todo)",
            "observation": "URL, focused element, accessibility tree with bids (BrowserGym)",
            "actions": ", ".join(ACTIONS),
            "task kinds": ", ".join(available_kinds()),
            "policies": "scripted, random, llm (with AGENTWORLD_LLM_BASE_URL)",
            "browser sandbox": sandbox_state(),
        }


OFF_SITE = "https://example.com/"
"""A page off every user's site, for the random policy's ``goto`` (blocked: the browser may
reach the site's origin only)."""
SITE_PROMPT = """You simulate a web browser (headless Chromium) on one web site, {site}: its own pages, links and forms; every other site is blocked.

Given the agent's action, reply with the next observation exactly as the browser shows it:
URL: the page's URL
Focused element: [bid] of the focused element, or none
Error: one line, only when the action failed (malformed action, unknown bid, blocked off-site navigation, timeout)
then a blank line and the page's accessibility tree, one node a line, indented by tabs: [bid] role 'name' then properties (value='...', selected='true', checked='false', focused, required); nodes without a bid (RootWebArea, StaticText) have none. Element bids are numbered in document order and kept while a page lives.

Actions (BrowserGym): click(bid), fill(bid, text), select_option(bid, option), press(bid, key), scroll(dx, dy), goto(url), go_back(), go_forward(), noop(wait_ms)."""


class SiteDomain(WebDomain):
    """:class:`WebDomain` on the user's site; :meth:`WebDomain.for_environment` builds it, so it
    lives beside it.

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
                "random": RandomPolicy(urls=[*(p.url for p in pages[:12]), OFF_SITE])}

    def off_host(self, url: str) -> bool:
        """Whether ``url`` is off the user's site (another origin than its start page's)."""
        return origin(url) != origin(self._map[1])

    def describe(self) -> dict[str, str]:
        return {
            "environment": f"real: headless Chromium on the user's site {self.url or self.site}",
            "observation": "URL, focused element, accessibility tree with bids (BrowserGym)",
            "task kinds": ", ".join(SITE_KINDS),
            "policies": "scripted (goal-directed explorer), explorer, random",
        }
