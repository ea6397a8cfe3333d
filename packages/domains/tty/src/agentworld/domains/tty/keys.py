"""Actions of the interactive terminal: AgentWorldBench's terminal rows' keystroke lists.

An action is a JSON list of ``{"keystrokes": str, "duration": seconds}``, as the public rows
write it (QwenLM/Qwen-AgentWorld AgentWorldBench ``terminal_test.jsonl``, actions of the
Terminus agent of terminal-bench): written in a ```` ```json ```` block
(:func:`render_action`), a bare list, or a Terminus answer object with a ``commands`` list.
Each ``keystrokes`` string is sent as ``tmux send-keys`` sends one argument: when the whole
string is a tmux key name (``C-c``, ``C-d``, ``Escape``, ``Enter``, ``Up``, ``F1``, ``M-x``;
tmux ``key-string.c``), that key; else the text itself, each ``\\n`` typed as Enter (``\\r``,
what the key sends). ``duration`` is how long to wait after sending (default 1.0 s, as
Terminus; at most :data:`MAX_DURATION_S`, longer waits are cut to it as Terminus caps them).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

MAX_DURATION_S = 10.0  # seconds one keystroke item may wait
MAX_COMMANDS = 16  # items of one action
MAX_KEYSTROKES = 4096  # characters of one item
DEFAULT_DURATION_S = 1.0
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL)

# Keys with one sequence whatever the cursor-key mode; xterm's sequences (ctlseqs).
_FIXED = {
    "Enter": b"\r", "KPEnter": b"\r", "Escape": b"\x1b", "Tab": b"\t", "BTab": b"\x1b[Z",
    "Space": b" ", "BSpace": b"\x7f", "IC": b"\x1b[2~", "Insert": b"\x1b[2~",
    "DC": b"\x1b[3~", "Delete": b"\x1b[3~", "PageUp": b"\x1b[5~", "PgUp": b"\x1b[5~",
    "PPage": b"\x1b[5~", "PageDown": b"\x1b[6~", "PgDn": b"\x1b[6~", "NPage": b"\x1b[6~",
    "F1": b"\x1bOP", "F2": b"\x1bOQ", "F3": b"\x1bOR", "F4": b"\x1bOS", "F5": b"\x1b[15~",
    "F6": b"\x1b[17~", "F7": b"\x1b[18~", "F8": b"\x1b[19~", "F9": b"\x1b[20~",
    "F10": b"\x1b[21~", "F11": b"\x1b[23~", "F12": b"\x1b[24~",
}  # fmt: skip
# Cursor keys: CSI in normal mode, SS3 in application mode (DECCKM, set by vim and less).
_CURSOR = {"Up": b"A", "Down": b"B", "Right": b"C", "Left": b"D", "Home": b"H", "End": b"F"}
_CONTROL_PUNCT = {"@": 0, "Space": 0, "[": 27, "\\": 28, "]": 29, "^": 30, "_": 31, "?": 127}


class ActionError(ValueError):
    """An action that is not a keystroke list; the message is the observation's error line."""


@dataclass(frozen=True, slots=True)
class Keystrokes:
    """One item of an action: ``keystrokes`` as written, and ``duration`` in seconds."""

    keystrokes: str
    duration: float

    def to_bytes(self, application_cursor: bool = False) -> bytes:
        """The bytes the terminal sends (:func:`key_bytes`)."""
        return key_bytes(self.keystrokes, application_cursor)


def key_name(text: str) -> bytes | None:
    """The bytes of tmux key name ``text`` in normal cursor mode, ``None`` if it is none."""
    return _key(text, False)


def _key(text: str, application: bool) -> bytes | None:
    if text in _FIXED:
        return _FIXED[text]
    if text in _CURSOR:
        return (b"\x1bO" if application else b"\x1b[") + _CURSOR[text]
    if text.startswith("M-") and len(text) > 2:
        rest = text[2:]
        inner = _key(rest, application) if len(rest) > 1 else rest.encode()
        return b"\x1b" + inner if inner is not None else None
    if text.startswith("C-") and len(text) > 2:
        rest = text[2:]
        if len(rest) == 1 and rest.isascii() and rest.isalpha():
            return bytes([ord(rest.upper()) - 64])
        if rest in _CONTROL_PUNCT:
            return bytes([_CONTROL_PUNCT[rest]])
    return None


def key_bytes(keystrokes: str, application_cursor: bool = False) -> bytes:
    """What ``tmux send-keys KEYSTROKES`` sends: the key when the whole string is a key name,
    else its UTF-8 text with ``\\n`` as Enter (``\\r``).

    Args:
        keystrokes: One item's ``keystrokes``.
        application_cursor: Whether the terminal is in application cursor-key mode (DECCKM):
            cursor keys then send ``ESC O A`` instead of ``ESC [ A``.
    """
    key = _key(keystrokes, application_cursor)
    if key is not None:
        return key
    return keystrokes.replace("\r\n", "\n").replace("\n", "\r").encode("utf-8", "surrogatepass")


def _duration(value: object, where: str) -> float:
    if value is None:
        return DEFAULT_DURATION_S
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ActionError(f"{where}.duration must be a number of seconds, got {value!r}")
    if value < 0:
        raise ActionError(f"{where}.duration must be >= 0 seconds, got {value!r}")
    return min(float(value), MAX_DURATION_S)


def parse_action(text: str) -> list[Keystrokes]:
    """The keystroke items of an action text.

    Accepts a ```` ```json ```` block or bare JSON holding a list of items, or an object with
    a ``commands`` list (a Terminus answer); an item is ``{"keystrokes": str, "duration":
    number}`` (``duration`` optional, default 1.0 s, cut to :data:`MAX_DURATION_S`).

    Raises:
        ActionError: (a ``ValueError``) the text is not such a list; the message names the
            item and field at fault and what is valid.
    """
    fenced = _FENCE.match(text)
    body = fenced.group(1) if fenced else text
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ActionError(
            f'action is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); expected '
            'a list of {"keystrokes": "...", "duration": seconds}'
        ) from None
    if isinstance(value, dict) and "commands" in value:
        value = value["commands"]
    if not isinstance(value, list):
        raise ActionError(
            f'action must be a JSON list of {{"keystrokes": "...", "duration": seconds}}, '
            f"got {type(value).__name__}"
        )
    if len(value) > MAX_COMMANDS:
        raise ActionError(f"action has {len(value)} items; at most {MAX_COMMANDS} are allowed")
    items = []
    for i, item in enumerate(value):
        where = f"action[{i}]"
        if not isinstance(item, dict):
            raise ActionError(f'{where} must be an object {{"keystrokes": "...", "duration": '
                              f"seconds}}, got {type(item).__name__}")  # fmt: skip
        keys = item.get("keystrokes")
        if not isinstance(keys, str):
            raise ActionError(f"{where}.keystrokes must be a string, got {keys!r:.80}")
        if len(keys) > MAX_KEYSTROKES:
            raise ActionError(f"{where}.keystrokes has {len(keys)} characters; at most "
                              f"{MAX_KEYSTROKES} are allowed")  # fmt: skip
        extra = set(item) - {"keystrokes", "duration"}
        if extra:
            raise ActionError(f"{where} has unknown fields {sorted(extra)}; valid: keystrokes, "
                              "duration")  # fmt: skip
        items.append(Keystrokes(keys, _duration(item.get("duration"), where)))
    return items


def render_action(items: list[tuple[str, float]] | list[Keystrokes]) -> str:
    """The action text of keystroke items, as the public rows write it: a ```` ```json ````
    block of the list, indented by 2."""
    rows = [{"keystrokes": k.keystrokes, "duration": k.duration} if isinstance(k, Keystrokes)
            else {"keystrokes": k[0], "duration": k[1]} for k in items]  # fmt: skip
    return "```json\n" + json.dumps(rows, indent=2, ensure_ascii=False) + "\n```"


__all__ = [
    "DEFAULT_DURATION_S",
    "MAX_DURATION_S",
    "ActionError",
    "Keystrokes",
    "key_bytes",
    "key_name",
    "parse_action",
    "render_action",
]  # fmt: skip
