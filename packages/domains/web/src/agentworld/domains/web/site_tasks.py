"""Tasks synthesised from the pages of the user's own site (never the built-in apps' tasks).

| kind | goal | done when |
| --- | --- | --- |
| ``site_visit`` | open the page titled X (from the start page) | the tab shows that page's URL |
| ``site_submit`` | submit the form on the page titled Y | a form of that page was submitted |

A task's ``setup`` holds ``start_url`` and ``site: true``; ``check`` the page's ``url`` and
``title``. :func:`site_done` tells whether an episode's state satisfies a task.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from agentworld.core.types import Task
from agentworld.domains.web.site_map import Page, normalize, own_forms

SITE_KINDS = ("site_visit", "site_submit")


def _name(page: Page, pages: Sequence[Page]) -> str:
    """The page's title, with its URL when another page has the same title (or none)."""
    if not page.title:
        return f"the page at {page.url}"
    twins = sum(p.title == page.title for p in pages)
    return f"the page titled \"{page.title}\"" + (f" ({page.url})" if twins > 1 else "")


def site_tasks(pages: list[Page], start_url: str) -> list[Task]:
    """Every task the pages give: a visit of each page but the start page, a submission of
    each page with a form of its own (:func:`~agentworld.domains.web.site_map.own_forms`)
    that has fields or a submit button (in crawl order)."""
    out: list[Task] = []
    start = normalize(start_url)
    for i, page in enumerate(pages):
        check = {"url": page.url, "title": page.title}
        if page.url != start:
            out.append(Task(id=f"web-site_visit-{i}", domain="web", kind="site_visit",
                            instruction=f"Open {_name(page, pages)}.",
                            setup={"start_url": start, "site": True},
                            check={"kind": "site_visit", **check}))
        if any(form.fields or form.submit for form in own_forms(page, pages)):
            out.append(Task(id=f"web-site_submit-{i}", domain="web", kind="site_submit",
                            instruction=f"Fill in and submit the form on {_name(page, pages)}.",
                            setup={"start_url": start, "site": True},
                            check={"kind": "site_submit", **check}))
    return out


def site_done(check: dict[str, Any], url: str, submitted_from: Sequence[str]) -> bool:
    """Whether a site task's ``check`` holds for the tab at ``url`` after forms were
    submitted from the pages ``submitted_from``."""
    if check["kind"] == "site_visit":
        return normalize(url) == check["url"]
    if check["kind"] == "site_submit":
        return check["url"] in {normalize(u) for u in submitted_from}
    raise ValueError(f"unknown site task kind {check['kind']!r}; valid: {', '.join(SITE_KINDS)}")


class SiteTaskSampler:
    """Seeded sampler over :func:`site_tasks`.

    Args:
        pages: The site's pages (:meth:`~agentworld.domains.web.site_target.SiteTarget.pages`).
        start_url: Where episodes start.

    Raises:
        ValueError: the pages give no task (a single page without a form).
    """

    def __init__(self, pages: Sequence[Page], start_url: str) -> None:
        self.tasks = site_tasks(pages, start_url)
        if not self.tasks:
            raise ValueError(f"the site at {start_url} gives no task: its start page links to "
                             "no other page of the site and has no form")
        self.kinds = sorted({t.kind for t in self.tasks})

    def sample(self, n: int, seed: int = 0) -> list[Task]:
        """``n`` tasks: kinds in turn, each kind's tasks in a seeded order without repeats
        until all of them were drawn (a kind with fewer tasks sits out its turns meanwhile:
        a site with one form gives one ``site_submit`` task per round, not half of them)."""
        rng = random.Random(seed)
        order = self.kinds[:]
        rng.shuffle(order)
        out: list[Task] = []
        while len(out) < n:
            left = {k: rng.sample([t for t in self.tasks if t.kind == k],
                                  sum(t.kind == k for t in self.tasks)) for k in order}
            while len(out) < n and any(left.values()):
                out += [left[k].pop() for k in order if left[k]][:n - len(out)]
        return out
