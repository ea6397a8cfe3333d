"""MiniWoB++ tasks in the web domain: four task pages of the ``miniwob`` package, an expert.

| kind | page | the page asks |
| --- | --- | --- |
| ``miniwob_click_button`` | ``click-button.html`` | Click on the "X" button. |
| ``miniwob_enter_text`` | ``enter-text.html`` | Enter "X" into the text field and press Submit. |
| ``miniwob_click_checkboxes`` | ``click-checkboxes.html`` | Select A, B and click Submit. |
| ``miniwob_focus_text`` | ``focus-text.html`` | Focus into the textbox. |

Each page draws its problem from ``Math.seedrandom(seed)`` (MiniWoB++'s own seeding, as its
Python package does it, ``miniwob/selenium_instance.py``); :data:`START_JS` seeds it, lifts the
10 s episode limit, starts the episode and hides the score panel and canvas (a countdown that
would make observations depend on wall-clock time). The page's own reward decides success:
``WOB_DONE_GLOBAL`` and ``WOB_RAW_REWARD_GLOBAL`` (read by :data:`REWARD_JS`); the raw reward
is 1 for a success and at most 0 otherwise.
"""

from __future__ import annotations

import re

from agentworld.core.types import Task
from agentworld.domains.web import axtree

PAGES = {"miniwob_click_button": "click-button", "miniwob_enter_text": "enter-text",
         "miniwob_click_checkboxes": "click-checkboxes", "miniwob_focus_text": "focus-text"}
KINDS = tuple(PAGES)
START_JS = """seed => {
  Math.seedrandom(seed);
  core.EPISODE_MAX_TIME = 3600 * 1000;
  core.startEpisodeReal();
  for (const id of ['reward-display', 'click-canvas']) {
    const el = document.getElementById(id);
    if (el) el.style.display = 'none';
  }
  return true;
}"""
REWARD_JS = "() => JSON.stringify([Boolean(WOB_DONE_GLOBAL), Number(WOB_RAW_REWARD_GLOBAL)])"


def make_task(kind: str, seed: int) -> Task:
    """The MiniWoB++ task of ``kind`` with page seed ``seed``.

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS`.
    """
    if kind not in PAGES:
        raise ValueError(f"unknown MiniWoB++ task kind {kind!r}; valid: {', '.join(KINDS)}")
    page = PAGES[kind]
    return Task(id=f"web-{kind}-{seed}", domain="web", kind=kind,
                instruction=f"Solve the MiniWoB++ task {page}: do what the instruction at the "
                            "top of the page says.",
                setup={"world_seed": seed, "miniwob": page,
                       "start_url": f"http://miniwob.test/miniwob/{page}.html"},
                check={"kind": kind})


def utterance(nodes: list[axtree.Node]) -> str:
    """The page's instruction: the text before its first element with a bid."""
    words = []
    for node in nodes[1:]:
        if node.bid is not None:
            break
        if node.role == "StaticText":
            words.append(node.name)
    return "".join(words)


def expert_action(kind: str, nodes: list[axtree.Node]) -> tuple[str, tuple] | None:
    """``(action name, arguments)`` of the expert's next step on a MiniWoB++ page."""
    query = utterance(nodes)
    if kind == "miniwob_click_button":
        match = re.search(r'Click on the "(.*)" button', query)
        node = axtree.find(nodes, "button", match.group(1)) if match else None
        return ("click", (node.bid,)) if node else None
    if kind == "miniwob_focus_text":
        node = axtree.find(nodes, "textbox")
        return ("click", (node.bid,)) if node else None
    if kind == "miniwob_enter_text":
        match = re.search(r'Enter "(.*)" into the text field', query)
        node = axtree.find(nodes, "textbox")
        if match is None or node is None:
            return None
        if node.props.get("value", "") != match.group(1):
            return ("fill", (node.bid, match.group(1)))
    elif kind == "miniwob_click_checkboxes":
        match = re.search(r"Select (.*) and click Submit", query)
        if match is None:
            return None
        wanted = set() if match.group(1) == "nothing" else set(match.group(1).split(", "))
        for node in nodes:
            if node.role == "checkbox" and node.bid is not None and \
                    (node.name in wanted) != (node.props.get("checked") == "true"):
                return ("click", (node.bid,))
    submit = axtree.find(nodes, "button", "Submit")
    return ("click", (submit.bid,)) if submit else None
