"""The to-do list (``http://todo.test``): items with due dates and priorities, a validated form.

Routes: ``/`` the items (each with "Complete TITLE" and "Delete TITLE" buttons, done ones
marked), ``/new`` (title, due date ``YYYY-MM-DD``, priority; validated on the server: a title
of 2-60 characters, a real calendar date in 2026-2030, a known priority).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

from starlette.requests import Request
from starlette.routing import Route

from agentworld.domains.web.apps.html import e, form, options, page, redirect
from agentworld.domains.web.apps.world import PRIORITIES, Item, World

SITE = "Todo"
NAV = [("/", "My tasks"), ("/new", "Add task")]


def valid_date(text: str) -> bool:
    """Whether ``text`` is ``YYYY-MM-DD`` of a real date in 2026-2030."""
    try:
        day = datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10 and 2026 <= day.year <= 2030


def routes(world_of: Callable[[], World]) -> list[Route]:
    """The to-do app's routes over the episode's world."""

    async def index(request: Request):
        w = world_of()
        rows = ""
        for i in w.items:
            state = "done" if i.done else f"due {i.due}, {i.priority}"
            button = ("" if i.done else f'<button name=op value=complete aria-label="Complete '
                      f'{e(i.title)}">Complete</button>')
            rows += (f'<li>{e(i.title)} ({state})<form method=post action="/item/{i.id}">'
                     f'{button}<button name=op value=delete aria-label="Delete {e(i.title)}">'
                     "Delete</button></form></li>")
        left = sum(not i.done for i in w.items)
        return page("My tasks", SITE, NAV, f"<p>{left} open</p><ul aria-label=\"Tasks\">{rows}</ul>")

    async def change(request: Request):
        w = world_of()
        op = (await form(request)).get("op")
        item = next((i for i in w.items if i.id == int(request.path_params["iid"])), None)
        if item is not None and op == "complete":
            item.done = True
        elif item is not None and op == "delete":
            w.items.remove(item)
        return redirect("/")

    async def new(request: Request):
        w = world_of()
        alert, data = "", {}
        if request.method == "POST":
            data = await form(request)
            if not 2 <= len(data.get("title", "")) <= 60:
                alert = "A title has 2 to 60 characters"
            elif not valid_date(data.get("due", "")):
                alert = "Due date must be a date YYYY-MM-DD between 2026 and 2030"
            elif data.get("priority") not in PRIORITIES:
                alert = "Choose a priority"
            else:
                next_id = max((i.id for i in w.items), default=0) + 1
                w.items.append(Item(next_id, data["title"], data["due"], data["priority"]))
                return redirect("/")
        body = ('<form method=post action="/new">'
                f'<label>Title <input name=title value="{e(data.get("title", ""))}"></label>'
                f'<label>Due date <input name=due placeholder=YYYY-MM-DD '
                f'value="{e(data.get("due", ""))}"></label>'
                f"{options('priority', 'Priority', PRIORITIES, data.get('priority', 'normal'))}"
                "<button>Save task</button></form>")
        return page("Add task", SITE, NAV, body, alert)

    return [Route("/", index), Route("/item/{iid:int}", change, methods=["POST"]),
            Route("/new", new, methods=["GET", "POST"])]
