"""The page's accessibility tree as text, with element ids (bids), BrowserGym-style.

Each element of the page gets a ``bid`` attribute (numbered in document order, kept while the
page lives: BrowserGym marks the DOM the same way); Chromium's own accessibility tree
(CDP ``Accessibility.getFullAXTree``) is joined to the DOM by backend node id
(``DOM.getDocument``) and flattened one node a line, tab-indented::

    RootWebArea 'Cart - Shop', focused
    \t[3] navigation 'Shop'
    \t\t[4] link 'Catalog'
    \t[9] heading 'Cart'
    \t[17] textbox 'Full name', value='Ada', required
    \tStaticText 'Total: $12.00'

as BrowserGym's ``flatten_axtree_to_str`` writes it (ServiceNow/BrowserGym,
``browsergym/utils/obs.py``): ``[bid] role 'name'`` then properties, ignored nodes and
``generic``/``none`` containers skipped (their children move up), a ``StaticText`` whose text
is already its parent's name or value dropped.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

MARK_JS = """() => {
  let n = window.__agentworldNextBid || 0;
  for (const el of document.querySelectorAll('body, body *')) {
    if (!el.hasAttribute('bid')) el.setAttribute('bid', String(n++));
  }
  window.__agentworldNextBid = n;
  const a = document.activeElement;
  const focused = a && a !== document.body ? a.getAttribute('bid') : null;
  return JSON.stringify({count: n, focused: focused});
}"""
"""Marks unmarked elements; returns ``{count, focused}`` as JSON text: never falsy, so it can be
polled, and a string, whose value Playwright's handle holds (reading an object's would be one
more evaluation in the page, without a timeout, that a page hung since would never answer)."""

SKIPPED_ROLES = frozenset({"generic", "none", "presentation", "InlineTextBox", "LineBreak",
                           "LayoutTable", "LayoutTableRow", "LayoutTableCell"})
SHOWN_STATES = ("checked", "selected", "expanded", "pressed")
SHOWN_FLAGS = ("focused", "required", "disabled", "multiselectable")


def bids_by_backend_id(document: dict[str, Any]) -> dict[int, str]:
    """``backendNodeId -> bid`` of every marked element of a CDP ``DOM.getDocument`` result."""
    out: dict[int, str] = {}
    stack = [document["root"]]
    while stack:
        node = stack.pop()
        attributes = node.get("attributes") or []
        for name, value in zip(attributes[::2], attributes[1::2], strict=False):
            if name == "bid":
                out[node["backendNodeId"]] = value
        stack.extend(node.get("children") or [])
        if node.get("contentDocument"):
            stack.append(node["contentDocument"])
    return out


def _value(field: dict[str, Any] | None) -> Any:
    return None if not field else field.get("value")


def node_line(node: dict[str, Any], bid: str | None) -> str:
    """One node's line without indentation: ``[bid] role 'name'`` and its properties."""
    role = _value(node.get("role")) or ""
    name = " ".join(str(_value(node.get("name")) or "").split())
    head = f"[{bid}] {role} {name!r}" if bid is not None else f"{role} {name!r}"
    parts = [head]
    value = _value(node.get("value"))
    if value not in (None, "") and role not in ("StaticText", "RootWebArea"):
        parts.append(f"value={' '.join(str(value).split())!r}")
    props = {p["name"]: _value(p.get("value")) for p in node.get("properties") or []}
    for state in SHOWN_STATES:
        if state in props and props[state] is not None:
            parts.append(f"{state}={str(props[state]).lower()!r}")
    parts += [flag for flag in SHOWN_FLAGS if props.get(flag) is True]
    if props.get("invalid") not in (None, "false", False):
        parts.append("invalid")
    return ", ".join(parts)


def flatten(ax_nodes: list[dict[str, Any]], bids: dict[int, str]) -> str:
    """The tree text of CDP AX nodes (``Accessibility.getFullAXTree()["nodes"]``) with bids
    from :func:`bids_by_backend_id`; ``""`` for an empty tree."""
    if not ax_nodes:
        return ""
    by_id = {n["nodeId"]: n for n in ax_nodes}
    lines: list[str] = []

    def visit(node_id: str, depth: int, parent_name: str) -> None:
        node = by_id.get(node_id)
        if node is None:
            return
        role = _value(node.get("role")) or ""
        name = " ".join(str(_value(node.get("name")) or "").split())
        shown = not node.get("ignored") and role not in SKIPPED_ROLES
        if role == "StaticText" and (not name or name in parent_name):
            shown = False
        if shown:
            lines.append("\t" * depth + node_line(node, bids.get(node.get("backendDOMNodeId"))))
        text = f"{name} {_value(node.get('value')) or ''}"  # a child repeating it is redundant
        for child in node.get("childIds") or []:
            visit(child, depth + 1 if shown else depth, text if shown else parent_name)

    visit(ax_nodes[0]["nodeId"], 0, "")
    return "\n".join(lines)


def node_lines(tree: str) -> list[str]:
    """The node lines of a tree text, indentation kept, blank lines dropped."""
    return [line.rstrip() for line in tree.splitlines() if line.strip()]


_NODE = re.compile(r"""^(\t*)(?:\[(\w+)\] )?(\S+) ('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")(.*)$""")
_PROP = re.compile(r"""(\w+)=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


@dataclass(frozen=True, slots=True)
class Node:
    """One parsed line of a tree text."""

    depth: int
    bid: str | None
    role: str
    name: str
    props: dict[str, str]
    flags: frozenset[str]


def parse_node(line: str) -> Node | None:
    """The :class:`Node` of one tree line, ``None`` for a line that is no node."""
    match = _NODE.match(line)
    if match is None:
        return None
    tabs, bid, role, quoted, rest = match.groups()
    try:
        name = ast.literal_eval(quoted)
    except (ValueError, SyntaxError):
        return None
    props = {}
    for key, value in _PROP.findall(rest):
        try:
            props[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            props[key] = value
    flags = frozenset(p.strip() for p in _PROP.sub("", rest).split(",") if p.strip())
    return Node(len(tabs), bid, role, name, props, flags)


def parse_tree(tree: str) -> list[Node]:
    """The nodes of a tree text, in order (lines that are no node skipped)."""
    return [n for n in map(parse_node, tree.splitlines()) if n is not None]


def find(nodes: list[Node], role: str, name: str | None = None, prefix: bool = False) -> Node | None:
    """The first node of ``role`` with that ``name`` (or a name starting with it)."""
    for node in nodes:
        if node.role == role and node.bid is not None and (
                name is None or node.name == name or (prefix and node.name.startswith(name))):
            return node
    return None


INTERACTIVE = frozenset({"link", "button", "textbox", "combobox", "option", "checkbox", "radio"})


def targets(tree: str) -> dict[str, str]:
    """``bid -> "role 'name'"`` of the interactive elements of a tree text (what
    :meth:`~agentworld.domains.web.env.WebEnv.privileged_state` records and
    :mod:`agentworld.domains.web.explain` reads)."""
    return {n.bid: f"{n.role} {n.name!r}" for n in parse_tree(tree)
            if n.bid is not None and n.role in INTERACTIVE}
