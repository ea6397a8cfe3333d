"""Seeded tasks over our servers: ``create``, ``lookup``, ``update``, ``aggregate`` and
``multi_step``, each on ``notes``, ``records`` or ``todo``.

A task's ``setup`` is ``{"server", "calls", "params"}``: the server, the tool calls that put its
initial state in place at reset (run on the real server, not recorded as steps) and the
parameters the instruction states (for the scripted expert). Its ``check`` reads only the
server's dumped state or the last tool response (:mod:`agentworld.domains.mcp.checks`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from agentworld.core.types import Task

KINDS = ("create", "lookup", "update", "aggregate", "multi_step")
SERVERS = ("notes", "records", "todo")
TOPICS = ("groceries", "meeting", "vacation", "budget", "recipe", "reading", "garden", "car",
          "dentist", "birthday", "project", "workout")
WORDS = ("blue", "quick", "seven", "river", "lamp", "north", "paper", "quiet", "amber", "stone",
         "cedar", "maple", "orbit", "pixel", "tulip", "velvet")
PEOPLE = ("ada", "bob", "chen", "dana", "eli", "fatima", "gus", "hana", "ivan", "june")
CITIES = ("Lyon", "Oslo", "Porto", "Kyoto", "Quito", "Tunis", "Perth", "Riga")
TAGS = ("work", "home", "urgent", "later")
Call = dict[str, Any]


def call(name: str, **arguments: Any) -> Call:
    """A set-up tool call."""
    return {"name": name, "arguments": arguments}


def has(path: str, **fields: Any) -> dict[str, Any]:
    return {"has": {"path": path, "fields": fields}}


def lacks(path: str, **fields: Any) -> dict[str, Any]:
    return {"lacks": {"path": path, "fields": fields}}


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, 4))


def _date(rng: random.Random) -> str:
    return f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _notes(rng: random.Random, n: int) -> list[Call]:
    return [call("create_note", title=t, body=_sentence(rng), tags=rng.sample(TAGS, rng.randint(0, 2)))
            for t in rng.sample(TOPICS, n)]


def _todos(rng: random.Random, n: int) -> list[Call]:
    day = _date(rng)
    return [call("add_todo", title=f"{verb} {t}", due=day if i % 2 else _date(rng),
                 priority=rng.choice(("low", "normal", "high")))
            for i, (verb, t) in enumerate(zip(rng.choices(("buy", "call", "plan", "fix"), k=n),
                                              rng.sample(TOPICS, n), strict=True))]


def _orders(rng: random.Random, n: int) -> list[Call]:
    out = [call("create_table", table="orders", columns=["customer", "city", "amount", "status"])]
    for _ in range(n):
        out.append(call("insert_row", table="orders", row={
            "customer": rng.choice(PEOPLE[:4]), "city": rng.choice(CITIES),
            "amount": rng.randint(5, 200), "status": rng.choice(("open", "shipped"))}))
    return out


def _create(server: str, rng: random.Random) -> tuple[str, list[Call], dict[str, Any], list[Any]]:
    if server == "notes":
        title, body, tag = rng.choice(TOPICS) + "-" + rng.choice(WORDS), _sentence(rng), rng.choice(TAGS)
        return (f"Create a note titled '{title}' with the body '{body}' and the tag '{tag}'.",
                _notes(rng, 2), {"title": title, "body": body, "tags": [tag]},
                [has("notes", title=title, body=body, tags=[tag])])
    if server == "todo":
        title, due, prio = f"renew {rng.choice(TOPICS)} {rng.choice(WORDS)}", _date(rng), "high"
        return (f"Add a high-priority to-do '{title}' due on {due}.", _todos(rng, 2),
                {"title": title, "due": due, "priority": prio},
                [has("todos", title=title, due=due, priority=prio, done=False)])
    row = {"customer": rng.choice(PEOPLE), "city": rng.choice(CITIES), "amount": rng.randint(5, 300),
           "status": "open"}
    return (f"Record a new open order in table 'orders': customer {row['customer']}, city "
            f"{row['city']}, amount {row['amount']}.", _orders(rng, 3), {"row": row},
            [has("tables.orders", **row)])


def _lookup(server: str, rng: random.Random) -> tuple[str, list[Call], dict[str, Any], list[Any]]:
    if server == "notes":
        setup = _notes(rng, 4)
        target = rng.choice(setup)["arguments"]
        return (f"What does the note titled '{target['title']}' say?", setup,
                {"title": target["title"]}, [{"answer": target["body"], "key": "body"}])
    if server == "todo":
        setup = _todos(rng, 4)
        target = rng.choice(setup)["arguments"]
        return (f"When is the to-do '{target['title']}' due?", setup, {"title": target["title"]},
                [{"answer": target["due"], "key": "due"}])
    setup = _orders(rng, 5)
    target = rng.choice(setup[1:])["arguments"]["row"]
    rows = [c["arguments"]["row"] for c in setup[1:]]
    first = next(r for r in rows if r["customer"] == target["customer"])
    return (f"Which city is the first order (lowest id) of customer {target['customer']} from?",
            setup, {"customer": target["customer"]}, [{"answer": first["city"], "key": "city"}])


def _update(server: str, rng: random.Random) -> tuple[str, list[Call], dict[str, Any], list[Any]]:
    if server == "notes":
        setup = _notes(rng, 3)
        title, body = rng.choice(setup)["arguments"]["title"], _sentence(rng)
        return (f"Change the body of the note '{title}' to '{body}'.", setup,
                {"title": title, "body": body}, [has("notes", title=title, body=body)])
    if server == "todo":
        setup = _todos(rng, 3)
        title = rng.choice(setup)["arguments"]["title"]
        return (f"Mark the to-do '{title}' as done.", setup, {"title": title},
                [has("todos", title=title, done=True)])
    setup = _orders(rng, 4)
    customer = setup[1]["arguments"]["row"]["customer"]
    return (f"Set the status of every order of customer {customer} to 'cancelled'.", setup,
            {"customer": customer}, [has("tables.orders", customer=customer, status="cancelled"),
                                     lacks("tables.orders", customer=customer, status="open"),
                                     lacks("tables.orders", customer=customer, status="shipped")])


def _aggregate(server: str, rng: random.Random) -> tuple[str, list[Call], dict[str, Any], list[Any]]:
    if server == "notes":
        setup, tag = _notes(rng, 5), rng.choice(TAGS)
        count = sum(tag in c["arguments"]["tags"] for c in setup)
        return (f"How many notes carry the tag '{tag}'?", setup, {"tag": tag}, [{"answer": count, "key": "count"}])
    if server == "todo":
        setup = _todos(rng, 5)
        day = setup[1]["arguments"]["due"]
        count = sum(c["arguments"]["due"] == day for c in setup)
        return (f"How many to-dos are due on {day}?", setup, {"due": day}, [{"answer": count, "key": "count"}])
    setup = _orders(rng, 6)
    customer = setup[1]["arguments"]["row"]["customer"]
    total = sum(c["arguments"]["row"]["amount"] for c in setup[1:]
                if c["arguments"]["row"]["customer"] == customer)
    return (f"What is the total amount of all orders of customer {customer}?", setup,
            {"customer": customer}, [{"answer": total, "key": "value"}])


def _multi_step(server: str, rng: random.Random) -> tuple[str, list[Call], dict[str, Any], list[Any]]:
    if server == "notes":
        setup = _notes(rng, 3)
        old, new = setup[0]["arguments"]["title"], rng.choice(WORDS) + "-log"
        body = setup[0]["arguments"]["body"]
        return (f"Rename the note '{old}' to '{new}' (same body), i.e. create '{new}' and delete "
                f"'{old}'.", setup, {"old": old, "new": new},
                [has("notes", title=new, body=body), lacks("notes", title=old)])
    if server == "todo":
        setup = _todos(rng, 3)
        title, due = setup[0]["arguments"]["title"], _date(rng)
        extra = f"follow up {rng.choice(TOPICS)}"
        return (f"Move the to-do '{title}' to {due} and add a low-priority to-do '{extra}' due "
                "the same day.", setup, {"title": title, "due": due, "extra": extra},
                [has("todos", title=title, due=due), has("todos", title=extra, due=due,
                                                         priority="low")])
    setup = _orders(rng, 3)
    customer, city = rng.choice(PEOPLE[4:]), rng.choice(CITIES)
    return (f"Create a table 'customers' with columns name and city, add {customer} from {city}, "
            f"then record an open order of amount 50 for {customer} from {city} in 'orders'.",
            setup, {"customer": customer, "city": city},
            [has("tables.customers", name=customer, city=city),
             has("tables.orders", customer=customer, city=city, amount=50, status="open")])


_MAKERS: dict[str, Callable[[str, random.Random], tuple[str, list[Call], dict[str, Any], list[Any]]]] = {
    "create": _create, "lookup": _lookup, "update": _update, "aggregate": _aggregate,
    "multi_step": _multi_step}


class McpTaskSampler:
    """Deterministic tasks: ``sample(n, seed=s)`` gives the same tasks for the same ``s``,
    cycling through every (kind, server) pair in a seeded order.

    Args:
        kinds: Task kinds to draw (default: all of :data:`KINDS`).
        servers: Servers to draw (default: all of :data:`SERVERS`).

    Raises:
        ValueError: an unknown kind or server (the message lists the valid ones).
    """

    def __init__(self, kinds: tuple[str, ...] = KINDS, servers: tuple[str, ...] = SERVERS):
        for name, given, valid in (("kind", kinds, KINDS), ("server", servers, SERVERS)):
            bad = [x for x in given if x not in valid]
            if bad or not given:
                raise ValueError(f"unknown task {name} {bad or 'none'}; valid: {', '.join(valid)}")
        self.kinds, self.servers = tuple(kinds), tuple(servers)

    def sample(self, n: int, *, seed: int) -> list[Task]:
        """``n`` tasks of seed ``seed``."""
        rng = random.Random(f"mcp-tasks-{seed}")
        pairs = [(k, s) for k in self.kinds for s in self.servers]
        rng.shuffle(pairs)
        out = []
        for i in range(n):
            kind, server = pairs[i % len(pairs)]
            instruction, calls, params, conditions = _MAKERS[kind](server, rng)
            out.append(Task(id=f"mcp-{seed}-{i}-{kind}-{server}", domain="mcp",
                            instruction=instruction, kind=kind,
                            setup={"server": server, "calls": calls, "params": params},
                            check={"all": conditions}))
        return out
