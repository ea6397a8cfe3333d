"""Seeded tasks of the web domain: six kinds over our three apps, plus four MiniWoB++ kinds
(:mod:`agentworld.domains.web.miniwob_tasks`) when the ``miniwob`` package is installed.

| kind | app | goal | checked on the app state |
| --- | --- | --- | --- |
| ``shop_cart`` | shop | put N of a product in the cart | the cart is exactly that |
| ``shop_checkout`` | shop | buy N of a product, with name, address, shipping | an order with those |
| ``forum_reply`` | forum | reply a text to a post | the post has that reply |
| ``forum_post`` | forum | publish a post (title, category, body) | such a post exists |
| ``todo_add`` | todo | add a task with a due date (given in words) and priority | such an item exists |
| ``todo_complete`` | todo | mark an open task done | it is done, none deleted |

A task's ``setup`` holds the world seed (the apps' initial state, :class:`World`) and the start
URL; ``check`` the expected values. :func:`is_done` tells whether a world satisfies a task.
"""

from __future__ import annotations

import datetime
import random

from agentworld.core.types import Task
from agentworld.domains.web import miniwob_tasks
from agentworld.domains.web.apps.miniwob import html_dir
from agentworld.domains.web.apps.world import CATEGORIES, PRIORITIES, SHIPPING, World

KINDS = ("shop_cart", "shop_checkout", "forum_reply", "forum_post", "todo_add", "todo_complete")
START = {"shop": "http://shop.test/", "forum": "http://forum.test/", "todo": "http://todo.test/"}
NAMES = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov"]
STREETS = ["12 Elm Street", "4 Harbour Road", "77 Mill Lane", "9 Station Square"]
REPLIES = ["Thanks for sharing this", "I had the same problem last week", "Count me in",
           "Great idea, I will try it", "Has anyone tried the other way"]
TITLES = ["Looking for a running partner", "Lost keys near the park", "Board game night",
          "Recommend a bread recipe", "Swap old books"]
CHORES = ["Order new glasses", "Fix the fence", "Plan the picnic", "Update the resume",
          "Visit grandma", "Buy stamps"]


def is_done(world: World, check: dict) -> bool:
    """Whether ``world`` satisfies a task's ``check``."""
    kind = check["kind"]
    if kind == "shop_cart":
        return world.cart == {check["product_id"]: check["qty"]}
    if kind == "shop_checkout":
        want = {"items": {str(check["product_id"]): check["qty"]}, "name": check["name"],
                "address": check["address"], "shipping": check["shipping"]}
        return any({k: o[k] for k in want} == want for o in world.orders)
    if kind == "forum_reply":
        post = world.post(check["post_id"])
        return post is not None and f"you: {check['text']}" in post.replies
    if kind == "forum_post":
        return any((p.title, p.category, p.body) == (check["title"], check["category"],
                                                     check["body"]) for p in world.posts)
    if kind == "todo_add":
        return any((i.title, i.due, i.priority) == (check["title"], check["due"],
                                                    check["priority"]) for i in world.items)
    if kind == "todo_complete":
        ids = {i.id: i.done for i in world.items}
        return ids.get(check["item_id"]) is True and len(ids) == check["count"]
    raise ValueError(f"unknown web task kind {kind!r}; valid: {', '.join(KINDS)}")


def available_kinds() -> tuple[str, ...]:
    """:data:`KINDS`, plus the MiniWoB++ kinds when the ``miniwob`` package is installed."""
    return KINDS + (miniwob_tasks.KINDS if html_dir() is not None else ())


def make_task(kind: str, seed: int) -> Task:
    """The task of ``kind`` for world ``seed`` (deterministic).

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS` or the MiniWoB++ kinds.
    """
    if kind in miniwob_tasks.KINDS:
        return miniwob_tasks.make_task(kind, seed)
    if kind not in KINDS:
        raise ValueError(f"unknown web task kind {kind!r}; valid: {', '.join(KINDS)}")
    rng = random.Random(f"{kind}:{seed}")
    world = World.build(seed)
    app = kind.split("_")[0]
    check: dict = {"kind": kind}
    if app == "shop":
        product = rng.choice([p for p in world.products if p.stock >= 1])
        qty = rng.randint(1, min(3, product.stock))
        check |= {"product_id": product.id, "product": product.name, "qty": qty}
        text = f"Add {qty} x {product.name} to the shopping cart (and nothing else)."
        if kind == "shop_checkout":
            check |= {"name": rng.choice(NAMES), "address": rng.choice(STREETS),
                      "shipping": rng.choice(SHIPPING)}
            text = (f"Buy {qty} x {product.name} in the shop: check out as {check['name']}, "
                    f"address {check['address']}, shipping {check['shipping']}.")
    elif kind == "forum_reply":
        post = rng.choice(world.posts)
        check |= {"post_id": post.id, "post": post.title, "text": rng.choice(REPLIES)}
        text = f"On the forum, reply \"{check['text']}\" to the post \"{post.title}\"."
    elif kind == "forum_post":
        check |= {"title": rng.choice(TITLES), "category": rng.choice(CATEGORIES),
                  "body": f"{rng.choice(REPLIES)}. Reply here."}
        text = (f"Publish a forum post titled \"{check['title']}\" in category "
                f"{check['category']} with the body \"{check['body']}\".")
    elif kind == "todo_add":
        day = datetime.date(2027, 1, 1) + datetime.timedelta(days=rng.randrange(700))
        check |= {"title": rng.choice(CHORES), "due": day.isoformat(),
                  "priority": rng.choice(PRIORITIES)}
        text = (f"Add the to-do \"{check['title']}\" due on {day.day} {day:%B %Y} with "
                f"{check['priority']} priority.")
    else:
        open_items = [i for i in world.items if not i.done] or world.items[:1]
        item = rng.choice(open_items)
        check |= {"item_id": item.id, "item": item.title, "count": len(world.items)}
        text = f"Mark the to-do \"{item.title}\" as done."
    return Task(id=f"web-{kind}-{seed}", domain="web", instruction=text, kind=kind,
                setup={"world_seed": seed, "start_url": START[app]}, check=check)


class WebTaskSampler:
    """Seeded sampler over :func:`available_kinds` (``kinds`` restricts them).

    Raises:
        ValueError: a kind in ``kinds`` is not available here.
    """

    def __init__(self, kinds: tuple[str, ...] | None = None) -> None:
        valid = available_kinds()
        kinds = valid if kinds is None else tuple(kinds)
        unknown = [k for k in kinds if k not in valid]
        if unknown:
            raise ValueError(f"unknown web task kinds {unknown}; valid: {', '.join(valid)}")
        self.kinds = list(kinds)

    def sample(self, n: int, seed: int = 0) -> list[Task]:
        """``n`` tasks: kinds in turn from a seeded shuffle, world seeds drawn from ``seed``."""
        rng = random.Random(seed)
        order = self.kinds[:]
        rng.shuffle(order)
        return [make_task(order[i % len(order)], rng.randrange(2**31)) for i in range(n)]
