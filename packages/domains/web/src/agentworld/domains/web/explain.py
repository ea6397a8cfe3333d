"""Rationales of web transitions from the real change: the target element, the URL, the apps'
state and the page that follows (``explain(step, previous_state)``, SFT reasoning).

``previous_state`` is the privileged state recorded with the observation before the step
(:meth:`~agentworld.domains.web.env.WebEnv.privileged_state`: ``url``, ``targets`` = bid ->
``role 'name'`` of the page's interactive elements, and the apps' state); the step's own
observation carries the state after it.
"""

from __future__ import annotations

from typing import Any

from agentworld.core.types import Step
from agentworld.domains.web import axtree
from agentworld.domains.web.actions import ActionError, parse
from agentworld.domains.web.axtree import targets
from agentworld.domains.web.env import parse_observation
from agentworld.domains.web.scorer import page_title


def _target(action: Any, previous: dict[str, Any]) -> str:
    bid = action.arguments.get("bid")
    if bid is None:
        return ""
    found = (previous.get("targets") or {}).get(bid)
    return f" on [{bid}] {found}" if found else f" on bid {bid!r}, which the page did not list"


def _state_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    out = []
    if before.get("cart") != after.get("cart"):
        out.append(f"the cart changes from {before.get('cart') or 'empty'} to "
                   f"{after.get('cart') or 'empty'} (product id: quantity)")
    new_orders = (after.get("orders") or [])[len(before.get("orders") or []):]
    out += [f"order #{o['number']} is placed for {o['name']}" for o in new_orders]
    old_posts = {p["id"]: p for p in before.get("posts") or []}
    for post in after.get("posts") or []:
        old = old_posts.get(post["id"])
        if old is None:
            out.append(f"a new post {post['title']!r} appears in {post['category']}")
        elif old["replies"] != post["replies"]:
            out.append(f"the post {post['title']!r} gets a reply ({post['replies']} now)")
    old_items = {i["id"]: i for i in before.get("items") or []}
    new_items = {i["id"]: i for i in after.get("items") or []}
    for key, item in new_items.items():
        if key not in old_items:
            out.append(f"a new to-do {item['title']!r} due {item['due']} is saved")
        elif item["done"] and not old_items[key]["done"]:
            out.append(f"the to-do {item['title']!r} is marked done")
    out += [f"the to-do {old_items[k]['title']!r} is deleted" for k in old_items if k not in new_items]
    return out


def _opening(action_text: str, before: dict[str, Any]) -> tuple[str, Any]:
    """The rationale's first sentence, from the action and the page before it alone, and the
    parsed action (``None`` when malformed: the sentence is then the whole rationale)."""
    try:
        action = parse(action_text)
    except ActionError as error:
        return (f"The action is malformed ({error}), so the browser does nothing: the same page "
                f"{before.get('url', '')} is shown again with the error."), None
    return (f"The action {action.text()} acts{_target(action, before)}." if "bid" in action.arguments
            else f"The action is {action.text()}."), action


def explain(step: Step, previous_state: dict[str, Any] | None) -> str:
    """A few sentences on what the action did and what the next page shows."""
    before = previous_state or {}
    after = step.observation.state or {}
    fields, tree = parse_observation(step.observation.text)
    opening, action = _opening(step.action.text, before)
    if action is None:
        return opening
    out = [opening]
    if fields.get("Error"):
        out.append(f"It fails: {fields['Error']}")
    old_url, new_url = before.get("url", ""), fields.get("URL", "")
    out.append(f"The page navigates from {old_url} to {new_url}." if old_url != new_url
               else f"The page stays at {new_url}.")
    changes = _state_changes(before, after)
    if changes:
        out.append("On the server, " + "; ".join(changes) + ".")
    if action.name == "fill" and not fields.get("Error"):
        out.append(f"The field now holds {action.arguments['value']!r}.")
    nodes = axtree.parse_tree(tree)
    out.append(f"The page {page_title(step.observation.text)!r} has {len(nodes)} nodes, "
               f"{sum(n.bid is not None for n in nodes)} with a bid; focus: "
               f"{fields.get('Focused element', 'none')}.")
    return " ".join(out)


def explain_text(action: str, observation: str) -> str:
    """What a simulator can write of :func:`explain` from the previous observation's text: the
    first sentence (the action and its target, read from the page's tree), which is all of it
    for a malformed action. The rest of :func:`explain` reads the page that follows, which a
    simulator has yet to predict."""
    fields, tree = parse_observation(observation)
    return _opening(action, {"url": fields.get("URL", ""), "targets": targets(tree)})[0]
