"""Fidelity of a predicted web observation against the real one, over tree nodes.

The observation's header lines (``URL:``, ``Focused element:``, ``Error:``) and each node line
of the accessibility tree (its depth, bid, role, name and properties) are items; node-level
F1 is the multiset F1 of the predicted items against the real ones (precision: share of
predicted items that are real; recall: share of real items predicted). ``exact`` is 1.0 when
every item matches in order.
"""

from __future__ import annotations

from collections import Counter

from agentworld.core.types import Observation
from agentworld.domains.web.env import parse_observation


def items(text: str) -> list[str]:
    """The scored items of an observation text: header lines, then node lines (tabs kept as
    depth, trailing spaces dropped)."""
    head, _, tree = text.strip("\n").partition("\n\n")
    if not tree and not head.startswith("URL:"):  # no header: the whole text is a tree
        head, tree = "", head
    return [line.strip() for line in head.splitlines() if line.strip()] + [
        line.rstrip() for line in tree.splitlines() if line.strip()]


def node_scores(predicted: str, reference: str) -> dict[str, float]:
    """``{"precision", "recall", "f1", "exact"}`` of ``predicted`` against ``reference``, in
    [0, 1]; two empty observations score 1.0."""
    pred, real = items(predicted), items(reference)
    if not pred and not real:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0, "exact": 1.0}
    common = sum((Counter(pred) & Counter(real)).values())
    precision = common / len(pred) if pred else 0.0
    recall = common / len(real) if real else 0.0
    f1 = 2 * precision * recall / (precision + recall) if common else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "exact": float(pred == real)}


def score(predicted: str, reference: Observation | str) -> float:
    """Node-level F1 in [0, 1] (:func:`node_scores`)."""
    text = reference.text if isinstance(reference, Observation) else str(reference)
    return node_scores(predicted, text)["f1"]


def page_title(text: str) -> str:
    """The page title (the ``RootWebArea`` name) of an observation text, ``""`` if none."""
    _, tree = parse_observation(text)
    first = tree.lstrip("\n").split("\n", 1)[0]
    if first.startswith("RootWebArea "):
        from agentworld.domains.web.axtree import parse_node

        node = parse_node(first)
        return node.name if node else ""
    return ""
