"""The explorer of a user's own site: follows links (pages not seen yet first), fills forms
with values valid for their fields (:func:`~agentworld.domains.web.site_values.field_value`),
submits them and goes back.

It acts from the observations (URL and accessibility tree) and the site's map from the crawl
(:mod:`agentworld.domains.web.site_map`): the map tells where each link leads and what each
form field accepts (type, pattern, bounds, options), which the accessibility tree does not
show. With ``goal=True`` (the ``scripted`` policy) it heads for its task's page by the
shortest chain of links, and there submits the form or stops; it explores where the map
knows no way.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from agentworld.core.domain_base import PolicyBase
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.web import axtree
from agentworld.domains.web.actions import call
from agentworld.domains.web.env import parse_observation
from agentworld.domains.web.site_map import FormField, Page, normalize, own_forms
from agentworld.domains.web.site_values import field_value

FIELD_ROLES = frozenset({"textbox", "searchbox", "spinbutton", "Date", "InputTime", "DateTime",
                         "ColorWell", "slider", "combobox", "listbox", "checkbox", "radio"})
"""Chromium's accessibility roles of form fields (input types, select, textarea)."""


MAX_HOPS_FROM = 3
"""Times the scripted explorer takes its way to the goal from one page; then it explores (a
way the map knows but the page does not offer, or a loop, never stalls an episode)."""


def _act(name: str, *args: object) -> Action:
    return Action(text=call(name, *args))


class SiteExplorer(PolicyBase):
    """Explores the site of ``pages`` (``name = "explorer"``; ``"scripted"`` with ``goal``).

    Args:
        pages: The site's pages (:meth:`~agentworld.domains.web.site_target.SiteTarget.pages`).
        seed: Seed of its choices (episode length 8-16 actions, 40 with ``goal``; links,
            values); ``reset(seed)`` re-seeds.
        goal: Head for the task's page (and submit its form for a ``site_submit`` task).
    """

    name = "explorer"

    def __init__(self, pages: Sequence[Page], seed: int = 0, goal: bool = False) -> None:
        self.pages = {p.url: p for p in pages}
        self.forms = {p.url: own_forms(p, list(pages)) for p in pages}
        self.goal = goal
        if goal:
            self.name = "scripted"
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Start an episode with ``random.Random(seed)``."""
        self.rng = random.Random(seed)
        self.length = 40 if self.goal else self.rng.randint(8, 16)
        self.visited: set[str] = set()
        self.submitted: set[str] = set()
        self.done_fields: set[str] = set()  # bids handled on the current page
        self.page_url = ""
        self.after_submit = False
        self.hops: dict[str, int] = {}  # times the goal's way was taken from each page

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The next action; ``None`` after the episode's drawn length, or at the goal."""
        if not history or sum(isinstance(h, Action) for h in history) >= self.length:
            return None
        fields, tree = parse_observation(str(history[-1].text))
        url = normalize(fields.get("URL", ""))
        nodes = axtree.parse_tree(tree)
        self.visited.add(url)
        if url != self.page_url:
            self.page_url, self.done_fields = url, set()
        if self.after_submit:
            self.after_submit = False
            return _act("go_back")
        page = self.pages.get(url)
        start = task.setup.get("start_url") if task is not None else None
        if not url.startswith(("http://", "https://")) and start:
            return _act("goto", start)  # gone back past the first page (about:blank)
        target = (task.check.get("url") if self.goal and task is not None
                  and task.setup.get("site") else None)
        if target is not None:
            if url == target:  # submit once (a form the site refuses is not retried for ever)
                return self._form(page, nodes) if task.kind == "site_submit" and \
                    url not in self.submitted else None
            hop = self._next_hop(url, target)
            node = self._link(page, nodes, hop) if hop is not None else None
            self.hops[url] = self.hops.get(url, 0) + 1
            if node is not None and self.hops[url] <= MAX_HOPS_FROM:
                return _act("click", node.bid)
        started = bool(self.done_fields)  # a form begun on this page is finished first
        if page is not None and url not in self.submitted and (started or self.rng.random() < 0.8):
            action = self._form(page, nodes)
            if action is not None:
                return action
        return self._follow(page, nodes)

    def _follow(self, page: Page | None, nodes: list[axtree.Node]) -> Action:
        """Click a link to a page not visited yet (one the map knows first, then one it does
        not); else go back or any link (even odds); go back without links."""
        links = [n for n in nodes if n.role == "link" and n.bid is not None]
        targets = {text: url for text, url in (page.links if page else [])}
        fresh = [n for n in links if targets.get(n.name, self.page_url) not in self.visited]
        fresh = fresh or [n for n in links if n.name not in targets]
        if not fresh and (not links or self.rng.random() < 0.5):
            return _act("go_back")
        return _act("click", self.rng.choice(fresh or links).bid)

    def _next_hop(self, start: str, target: str) -> str | None:
        """The URL of the first link on a shortest chain from ``start`` to ``target``."""
        first: dict[str, str] = {}
        queue, seen = [start], {start}
        while queue:
            url = queue.pop(0)
            for _, link in self.pages[url].links if url in self.pages else ():
                if link in seen:
                    continue
                seen.add(link)
                first[link] = first.get(url, link) if url != start else link
                if link == target:
                    return first[link]
                queue.append(link)
        return None

    @staticmethod
    def _link(page: Page | None, nodes: list[axtree.Node], href: str) -> axtree.Node | None:
        """The link node that leads to ``href``: the k-th link of its text when it is the k-th
        link of that text on the page (sqlite-web's column rows each have a "Drop" link, as
        does its table's tab bar), else the first."""
        links = page.links if page is not None else []
        text = next((t for t, u in links if u == href), None)
        if text is None:
            return None
        k = [u for t, u in links if t == text].index(href)
        named = [n for n in nodes if n.role == "link" and n.bid is not None and n.name == text]
        return named[k] if k < len(named) else (named[0] if named else None)

    def _pairs(self, page: Page, nodes: list[axtree.Node]) -> list[tuple[FormField, axtree.Node]]:
        """The page's form fields with their accessibility nodes: in document order when the
        counts agree, else by label."""
        every = [f for form in page.forms for f in form.fields]
        own = {id(f) for form in self.forms.get(page.url, page.forms) for f in form.fields}
        boxes = [n for n in nodes if n.bid is not None and n.role in FIELD_ROLES]
        if len(every) == len(boxes):
            return [(f, n) for f, n in zip(every, boxes) if id(f) in own]
        out, used = [], set()
        for item in (f for f in every if id(f) in own):
            match = next((n for n in boxes if n.name == item.label and n.bid not in used), None)
            if match is not None:
                used.add(match.bid)
                out.append((item, match))
        return out

    def _form(self, page: Page | None, nodes: list[axtree.Node]) -> Action | None:
        """The next field to fill, check or select in this page's own forms
        (:func:`~agentworld.domains.web.site_map.own_forms`), then its form's submit button;
        ``None`` when the page has no form of its own."""
        forms = self.forms.get(page.url, page.forms) if page is not None else []
        if page is None or not forms:
            return None
        for item, node in self._pairs(page, nodes):
            group = f"radio:{item.attrs.get('name', node.bid)}"
            if node.bid in self.done_fields or group in self.done_fields:
                continue
            self.done_fields.add(node.bid)
            if item.type == "radio":
                self.done_fields.add(group)
                return _act("click", node.bid)
            if item.type == "checkbox":
                if node.props.get("checked") != "true" and (item.required or self.rng.random() < 0.5):
                    return _act("click", node.bid)
                continue
            value = field_value(item, self.rng)
            if value is None:
                continue
            if item.type == "select":
                return _act("select_option", node.bid, value)
            return _act("fill", node.bid, value)
        form = next((f for f in forms if f.fields), forms[0])
        button = axtree.find(nodes, "button", form.submit) if form.submit else None
        self.submitted.add(page.url)
        self.after_submit = True
        if button is not None:
            return _act("click", button.bid)
        boxes = [n for n in nodes if n.bid is not None and n.role in ("textbox", "searchbox")]
        return _act("press", boxes[-1].bid, "Enter") if boxes else None
