"""Collection policies of the web domain: ``scripted`` (an expert), ``random`` and ``llm``.

* :class:`ScriptedExpert` solves every task kind of :mod:`agentworld.domains.web.tasks` by
  reading the page it is on (URL and accessibility tree of the last observation): it finds
  links, fields and buttons by role and name, fills a form's fields that do not hold the
  wanted value yet (in a seeded order), then submits. It never reads the apps' state.
* :class:`RandomPolicy` clicks, fills, selects, scrolls, navigates (sometimes off-host) and
  sends malformed actions, 4-10 per episode.
* ``llm``: the shared :class:`~agentworld.core.llm_policy.LLMPolicy` with a browser-agent
  prompt; the first action call in the reply is taken (:func:`~agentworld.domains.web.actions.extract`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from urllib.parse import urlsplit

from agentworld.core.domain_base import PolicyBase
from agentworld.core.llm_policy import LLMPolicy, endpoint
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.web import axtree, miniwob_tasks
from agentworld.domains.web.actions import ACTIONS, call, extract
from agentworld.domains.web.env import parse_observation


def _act(name: str, *args: object) -> Action:
    return Action(text=call(name, *args))


class ScriptedExpert(PolicyBase):
    """The expert (``name = "scripted"``).

    Args:
        seed: Seed of its choices (a first scroll, the order of form fields, click or Enter);
            ``reset(seed)`` re-seeds.
    """

    name = "scripted"

    def __init__(self, seed: int = 0) -> None:
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Start an episode with ``random.Random(seed)``."""
        self.rng = random.Random(seed)
        self.scrolled = self.rng.random() >= 0.2
        self.shuffle = self.rng.random() < 0.5

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The next action, or ``None`` once the task is done (or there is none)."""
        if task is None or not history:
            return None
        fields, tree = parse_observation(str(history[-1].text))
        nodes = axtree.parse_tree(tree)
        path = urlsplit(fields.get("URL", "")).path
        if not self.scrolled:
            self.scrolled = True
            return _act("scroll", 0, 200)
        kind, check = task.kind, task.check
        if kind in miniwob_tasks.KINDS:
            step = miniwob_tasks.expert_action(kind, nodes)
            return _act(step[0], *step[1]) if step else None
        if kind.startswith("shop"):
            return self._shop(kind, check, path, nodes)
        if kind == "forum_reply":
            if path == "/":
                return self._click(nodes, "link", check["post"])
            if path.startswith("/post/"):
                return self._form(nodes, [("textbox", "Reply", check["text"])], "Post reply")
            return self._click(nodes, "link", "All posts")
        if kind == "forum_post":
            if path == "/new":
                return self._form(nodes, [("textbox", "Title", check["title"]),
                                          ("combobox", "Category", check["category"]),
                                          ("textbox", "Body", check["body"])], "Publish")
            if path.startswith("/post/"):
                return None
            return self._click(nodes, "link", "New post")
        if kind == "todo_add":
            if path == "/new":
                return self._form(nodes, [("textbox", "Title", check["title"]),
                                          ("textbox", "Due date", check["due"]),
                                          ("combobox", "Priority", check["priority"])], "Save task")
            return self._click(nodes, "link", "Add task")
        # todo_complete
        button = axtree.find(nodes, "button", f"Complete {check['item']}")
        return _act("click", button.bid) if button else None

    def _shop(self, kind: str, check: dict, path: str, nodes: list[axtree.Node]) -> Action | None:
        if path == "/":
            return self._click(nodes, "link", check["product"])
        if path.startswith("/product/"):
            return self._form(nodes, [("combobox", "Quantity", str(check["qty"]))], "Add to cart")
        if path == "/cart":
            return self._click(nodes, "link", "Checkout") if kind == "shop_checkout" else None
        if path == "/checkout":
            return self._form(nodes, [("textbox", "Full name", check["name"]),
                                      ("textbox", "Address", check["address"]),
                                      ("combobox", "Shipping", check["shipping"])], "Place order")
        return None

    def _click(self, nodes: list[axtree.Node], role: str, name: str) -> Action | None:
        node = axtree.find(nodes, role, name)
        return _act("click", node.bid) if node else None

    def _form(self, nodes: list[axtree.Node], wanted: list[tuple[str, str, str]],
              submit: str) -> Action | None:
        order = wanted[:]
        if self.shuffle:
            random.Random(len(wanted)).shuffle(order)
        for role, label, value in order:
            node = axtree.find(nodes, role, label)
            if node is None:
                return None
            if node.props.get("value", "") != value:
                name = "select_option" if role == "combobox" else "fill"
                return _act(name, node.bid, value)
        return self._click(nodes, "button", submit)


class RandomPolicy(PolicyBase):
    """Random browser actions (``name = "random"``), 4-10 per episode.

    Args:
        seed: Seed of its choices; ``reset(seed)`` re-seeds.
        urls: Where its ``goto`` goes (default :attr:`URLS`, the built-in apps' pages and
            two off-site ones; a user's site: its own pages).
    """

    name = "random"
    WORDS = ("hello", "2027-05-01", "tomorrow", "Ada", "12 Elm Street", "", "x" * 3, "Thanks!")
    URLS = ("http://shop.test/cart", "http://forum.test/new", "http://todo.test/new",
            "http://shop.test/product/2", "https://example.com/", "http://127.0.0.1:9/")

    def __init__(self, seed: int = 0, urls: Sequence[str] = ()) -> None:
        self.urls = tuple(urls) or self.URLS
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Start an episode with ``random.Random(seed)``."""
        self.rng = random.Random(seed)
        self.length = self.rng.randint(4, 10)

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """A random action; ``None`` after the episode's drawn length."""
        if sum(isinstance(item, Action) for item in history) >= self.length:
            return None
        rng = self.rng
        _, tree = parse_observation(str(history[-1].text)) if history else ({}, "")
        nodes = [n for n in axtree.parse_tree(tree) if n.bid is not None]
        by_role = {role: [n for n in nodes if n.role == role]
                   for role in ("link", "button", "textbox", "combobox")}
        roll = rng.random()
        if roll < 0.45 and (by_role["link"] or by_role["button"]):
            return _act("click", rng.choice(by_role["link"] + by_role["button"]).bid)
        if roll < 0.6 and by_role["textbox"]:
            return _act("fill", rng.choice(by_role["textbox"]).bid, rng.choice(self.WORDS))
        if roll < 0.7 and by_role["combobox"]:
            box = rng.choice(by_role["combobox"])
            options = [n.name for n in axtree.parse_tree(tree) if n.role == "option"] or ["1"]
            return _act("select_option", box.bid, rng.choice(options))
        if roll < 0.8:
            return rng.choice([_act("scroll", 0, rng.choice([-300, 200, 600])), _act("go_back"),
                               _act("noop", rng.choice([0, 100])), _act("go_forward")])
        if roll < 0.9:
            return _act("goto", rng.choice(self.urls))
        if roll < 0.95 and nodes:
            return _act("press", rng.choice(nodes).bid, rng.choice(["Enter", "Tab"]))
        return Action(text=rng.choice(["click(999)", "click", "fill('3')", "type('3', 'a')",
                                       "click('1'", "scroll('down')"]))


WEB_AGENT_PROMPT = (
    "You operate a web browser to complete a task. Each turn you see the page's URL, its "
    "focused element and its accessibility tree, where [N] is an element's bid. Reply with "
    "exactly one action, one of: click(bid), fill(bid, text), select_option(bid, option), "
    "press(bid, key), scroll(dx, dy), goto(url), go_back(), go_forward(), noop(); for "
    "example fill('12', 'Ada'). Reply DONE when the task is complete."
)
assert all(name in WEB_AGENT_PROMPT for name in ACTIONS)


def parse_reply(reply: str) -> Action | None:
    """The action in a model's reply, ``None`` for ``DONE`` or no action."""
    if reply.strip().rstrip(".").upper() == "DONE":
        return None
    text = extract(reply)
    return Action(text=text) if text else None


def make_policies(seed: int = 0) -> dict[str, PolicyBase]:
    """Fresh policies by name: ``scripted`` and ``random``, plus ``llm`` when
    ``$AGENTWORLD_LLM_BASE_URL`` is set."""
    out: dict[str, PolicyBase] = {"scripted": ScriptedExpert(seed), "random": RandomPolicy(seed)}
    if endpoint() is not None:
        out["llm"] = LLMPolicy(WEB_AGENT_PROMPT, parse_reply, seed=seed)
    return out
