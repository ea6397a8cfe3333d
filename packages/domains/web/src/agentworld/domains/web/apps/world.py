"""The state of the local web apps for one episode, built from a seed.

A :class:`World` holds the shop (catalog, cart, orders), the forum (posts with replies) and the
to-do list. ``World.build(seed)`` draws the same catalog, posts and items for the same seed;
the apps mutate it while the agent acts, and the environment reads it to check the task.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

PRODUCTS = ["Blue Mug", "Desk Lamp", "Wool Socks", "Notebook", "Water Bottle", "Tea Sampler",
            "Phone Stand", "Wall Clock", "Plant Pot", "Travel Pillow", "Pencil Case", "Yoga Mat",
            "Coffee Grinder", "Cutting Board", "Bike Bell", "Rain Jacket"]
TOPICS = ["Best hiking trails nearby", "Fixing a squeaky door", "Sourdough starter tips",
          "Which laptop for students", "Weekend chess meetup", "Learning to juggle",
          "Balcony tomato harvest", "Repairing a bike chain", "Quiet cafes to work in",
          "Winter running gear"]
AUTHORS = ["ana", "bo", "chen", "dara", "eli", "fay"]
CATEGORIES = ["General", "Help", "Events", "Hobbies"]
CHORES = ["Buy milk", "Call the plumber", "Renew passport", "Water the plants",
          "Book dentist visit", "Pay electricity bill", "Return library books", "Clean the oven",
          "Send birthday card", "Back up photos"]
PRIORITIES = ["low", "normal", "high"]
SHIPPING = ["Standard", "Express", "Pickup"]


@dataclass
class Product:
    id: int
    name: str
    price_cents: int
    stock: int


@dataclass
class Post:
    id: int
    title: str
    author: str
    category: str
    body: str
    replies: list[str] = field(default_factory=list)


@dataclass
class Item:
    id: int
    title: str
    due: str
    priority: str
    done: bool = False


@dataclass
class World:
    """One episode's app state (mutated by the apps' handlers)."""

    seed: int
    products: list[Product]
    cart: dict[int, int]
    orders: list[dict]
    posts: list[Post]
    items: list[Item]

    @classmethod
    def build(cls, seed: int) -> World:
        """The initial state of ``seed``: 6 products, 4 posts (0-2 replies each), 4 to-dos."""
        rng = random.Random(seed)
        products = [Product(i + 1, name, rng.randrange(300, 9000, 25), rng.randint(1, 9))
                    for i, name in enumerate(rng.sample(PRODUCTS, 6))]
        posts = []
        for i, title in enumerate(rng.sample(TOPICS, 4)):
            author = rng.choice(AUTHORS)
            replies = [f"{rng.choice(AUTHORS)}: {rng.choice(['Agreed.', 'Thanks!', 'Try again later.', 'Same here.'])}"
                       for _ in range(rng.randint(0, 2))]
            posts.append(Post(i + 1, title, author, rng.choice(CATEGORIES),
                              f"{title}? Posted by {author}.", replies))
        items = [Item(i + 1, title, f"2027-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                      rng.choice(PRIORITIES), rng.random() < 0.25)
                 for i, title in enumerate(rng.sample(CHORES, 4))]
        return cls(seed, products, {}, [], posts, items)

    def product(self, product_id: int) -> Product | None:
        return next((p for p in self.products if p.id == product_id), None)

    def post(self, post_id: int) -> Post | None:
        return next((p for p in self.posts if p.id == post_id), None)

    def snapshot(self) -> dict:
        """A JSON-able copy of the mutable state (the privileged state of an observation)."""
        return {
            "cart": {str(k): v for k, v in sorted(self.cart.items())},
            "orders": [dict(o) for o in self.orders],
            "posts": [{"id": p.id, "title": p.title, "category": p.category,
                       "replies": len(p.replies)} for p in self.posts],
            "items": [{"id": i.id, "title": i.title, "due": i.due, "priority": i.priority,
                       "done": i.done} for i in self.items],
        }


def price(cents: int) -> str:
    """``1234`` -> ``"$12.34"``."""
    return f"${cents // 100}.{cents % 100:02d}"
