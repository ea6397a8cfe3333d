"""Browser actions in BrowserGym's vocabulary, parsed from their text.

An action is one Python-style call with literal arguments, as BrowserGym's high-level action
set writes it (ServiceNow/BrowserGym, ``browsergym/core/action/functions.py``)::

    click('12')                 fill('17', 'Ada Lovelace')     select_option('11', 'Express')
    press('17', 'Enter')        scroll(0, 300)                 goto('http://shop.test/cart')
    go_back()                   go_forward()                   noop(500)

The text is parsed with :mod:`ast` (never evaluated). Anything else is a :class:`ActionError`
whose message is the observation's error line.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

SIGNATURES: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "click": (("bid",), {"button": "left"}),
    "fill": (("bid", "value"), {}),
    "select_option": (("bid", "options"), {}),
    "press": (("bid", "key_comb"), {}),
    "scroll": (("delta_x", "delta_y"), {}),
    "goto": (("url",), {}),
    "go_back": ((), {}),
    "go_forward": ((), {}),
    "noop": ((), {"wait_ms": 1000}),
}
"""Action name -> (required parameters, optional parameters with defaults)."""

ACTIONS = tuple(SIGNATURES)
_CALL = re.compile(r"\b(" + "|".join(ACTIONS) + r")\(.*\)", re.S)


class ActionError(ValueError):
    """A malformed action; the message is what the agent sees."""


@dataclass(frozen=True, slots=True)
class BrowserAction:
    """A parsed action: its ``name`` and arguments by parameter name (defaults filled)."""

    name: str
    arguments: dict[str, Any]

    def text(self) -> str:
        """The canonical text, e.g. ``fill('17', 'Ada')``."""
        required, optional = SIGNATURES[self.name]
        args = [repr(self.arguments[p]) for p in required]
        args += [f"{k}={self.arguments[k]!r}" for k, d in optional.items()
                 if self.arguments.get(k, d) != d]
        return f"{self.name}({', '.join(args)})"


def call(name: str, *args: Any, **kwargs: Any) -> str:
    """The text of an action, e.g. ``call("fill", "17", "Ada") == "fill('17', 'Ada')"``."""
    return parse(f"{name}({', '.join([*map(repr, args), *(f'{k}={v!r}' for k, v in kwargs.items())])})").text()


def parse(text: str) -> BrowserAction:
    """Parse one action.

    Raises:
        ActionError: not exactly one call of :data:`ACTIONS` with literal arguments of the
            right number and types (the message says which and lists what is valid).
    """
    source = text.strip()
    if not source:
        raise ActionError("empty action; valid actions: " + ", ".join(ACTIONS))
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError:
        raise ActionError(f"malformed action {source[:80]!r}: expected one call such as "
                          f"click('12'); valid actions: {', '.join(ACTIONS)}") from None
    if not isinstance(tree, ast.Call) or not isinstance(tree.func, ast.Name):
        raise ActionError(f"malformed action {source[:80]!r}: expected one call such as "
                          f"click('12'); valid actions: {', '.join(ACTIONS)}")
    name = tree.func.id
    if name not in SIGNATURES:
        raise ActionError(f"unknown action {name!r}; valid actions: {', '.join(ACTIONS)}")
    required, optional = SIGNATURES[name]
    params = [*required, *optional]
    try:
        values = [ast.literal_eval(a) for a in tree.args]
        keywords = {k.arg: ast.literal_eval(k.value) for k in tree.keywords}
    except ValueError:
        raise ActionError(f"{name}: arguments must be literals (strings, numbers, lists)") from None
    if len(values) > len(params) or None in keywords or set(keywords) - set(params):
        raise ActionError(f"{name} takes ({', '.join(params)}); got {source[:80]!r}")
    arguments = dict(optional) | dict(zip(params, values, strict=False)) | keywords
    missing = [p for p in required if p not in arguments]
    if missing:
        raise ActionError(f"{name} is missing {', '.join(missing)}; it takes ({', '.join(params)})")
    _check_types(name, arguments)
    return BrowserAction(name, arguments)


def _check_types(name: str, arguments: dict[str, Any]) -> None:
    for key in ("bid", "value", "key_comb", "url"):
        if key in arguments:
            if isinstance(arguments[key], int) and key == "bid":
                arguments[key] = str(arguments[key])
            if not isinstance(arguments[key], str):
                raise ActionError(f"{name}: {key} must be a string, got {arguments[key]!r}")
    if "options" in arguments:
        opts = arguments["options"]
        if not (isinstance(opts, str) or (isinstance(opts, list) and all(isinstance(o, str) for o in opts))):
            raise ActionError(f"{name}: options must be a string or a list of strings")
    for key in ("delta_x", "delta_y", "wait_ms"):
        if key in arguments and (isinstance(arguments[key], bool)
                                 or not isinstance(arguments[key], int | float)):
            raise ActionError(f"{name}: {key} must be a number, got {arguments[key]!r}")
    if arguments.get("button", "left") not in ("left", "middle", "right"):
        raise ActionError(f"{name}: button must be 'left', 'middle' or 'right'")


def extract(reply: str) -> str | None:
    """The first action call in a model's reply (in a code fence or not), else ``None``."""
    match = _CALL.search(reply)
    if match is None:
        return None
    text = match.group(0)
    for end in range(len(text), 0, -1):  # the shortest balanced prefix that parses
        if text[end - 1] == ")":
            try:
                parse(text[:end])
                return text[:end]
            except ActionError:
                continue
    return text.splitlines()[0]
