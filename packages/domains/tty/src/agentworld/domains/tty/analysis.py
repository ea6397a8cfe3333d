"""Scoring and reading of interactive-terminal steps: the screen scorer, action types and
families, the in-episode consistency subset, and SFT rationales from the real state change.

* :func:`score`: fidelity of a predicted screen over its rows: 0.8 x the rows' order-aware
  F1 (matching rows of ``difflib.SequenceMatcher``, 2M / (rows predicted + rows real)) + 0.2 x
  whether the last row (the cursor's: a prompt, ``>>>``, a status line) is right; 1.0 exactly
  when the screens are equal.
* :func:`action_words`: what an action types, item by item: ``key:C-c`` for a key name, the
  program or command word of a typed line (``python3``, ``less``, ``vi``, ``ls``), ``text``
  for keys typed into a program (``:wq``, ``G``).
* :func:`consistency_turns`: steps whose screen depends on what the episode itself did: a file
  read (``cat``, ``less``, ``vi``...) after an earlier step wrote it (``>``, ``touch``, ``vi``
  then ``:w``, Python's ``open(..., 'w')``), a Python name used after an earlier step assigned
  it, and ``Up`` (shell or REPL history) after an earlier typed line.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from agentworld.core.types import Action, Episode, Observation, Step
from agentworld.domains.tty.keys import ActionError, key_name, parse_action

PROGRAMS = ("python3", "python", "less", "more", "vi", "vim", "top", "sleep", "cat", "bc", "man")
_WORD = re.compile(r"[A-Za-z_][\w.-]*")
_WRITES = (re.compile(r">>?\s*([\w.-]+)"), re.compile(r"\btouch\s+([\w.-]+)"),
           re.compile(r"""open\(\s*['"]([\w.-]+)['"]\s*,\s*['"][wa]"""))  # fmt: skip
_VI = re.compile(r"\bvim?\s+([\w.-]+)")
_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*=[^=]")


def score(predicted: str, reference: Observation | str) -> float:
    """Screen fidelity in [0, 1] (see the module docstring); 1.0 only for an equal screen."""
    real = reference.text if isinstance(reference, Observation) else reference
    if predicted == real:
        return 1.0
    a, b = predicted.split("\n"), real.split("\n")
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    matched = sum(block.size for block in matcher.get_matching_blocks())
    f1 = 2 * matched / (len(a) + len(b))
    return round(0.8 * f1 + 0.2 * float(a[-1] == b[-1]), 6)


def items_of(action: Action | str) -> list[str] | None:
    """The ``keystrokes`` of each item of an action, ``None`` when it is malformed."""
    text = action.text if isinstance(action, Action) else action
    try:
        return [item.keystrokes for item in parse_action(text)]
    except ActionError:
        return None


def _lines(items: list[str]) -> list[str]:
    """Items with a typed text followed by an ``Enter`` item joined into one line."""
    out: list[str] = []
    for keys in items:
        if keys in ("Enter", "KPEnter") and out and key_name(out[-1]) is None \
                and not out[-1].endswith("\n"):
            out[-1] += "\n"
        else:
            out.append(keys)
    return out


def action_words(action: Action | str) -> list[str]:
    """The words of what an action types (see the module docstring); ``["invalid"]`` for a
    malformed action."""
    items = items_of(action)
    if items is None:
        return ["invalid"]
    words = []
    for keys in _lines(items):
        if key_name(keys) is not None:
            words.append(f"key:{keys}")
            continue
        first = keys.split()[0] if keys.split() else ""
        code = _ASSIGN.match(keys) is not None
        if "\n" in keys and _WORD.fullmatch(first) and not code:
            words.append(first)
        else:
            words.append("text")
    return words or ["wait"]


def action_type(action: Action) -> str:
    """The action's type for fidelity reports: the interactive program it starts
    (:data:`PROGRAMS`), ``command`` for another command line, ``keys`` when it sends only key
    names, ``text`` for keys typed into a program, ``invalid``."""
    words = action_words(action)
    if words == ["invalid"]:
        return "invalid"
    for word in words:
        if word in PROGRAMS:
            return word
    if any(w not in ("text", "wait") and not w.startswith("key:") for w in words):
        return "command"
    return "keys" if all(w.startswith("key:") for w in words) else "text"


def command_families(action: Action) -> set[str]:
    """Families for out-of-distribution hold-outs: every word of :func:`action_words`."""
    return set(action_words(action))


def consistency_turns(episode: Episode) -> list[int]:
    """0-based steps whose real screen depends on what earlier steps of the episode did (see the
    module docstring)."""
    written: set[str] = set()
    names: set[str] = set()
    typed_line = False
    editing: str | None = None
    out = []
    for i, step in enumerate(episode.steps):
        items = items_of(step.action) or []
        text = "\n".join(items)
        reads = {w for w in _WORD.findall(text) if w in written or w in names}
        assigned = {m.group(1) for line in text.split("\n") if (m := _ASSIGN.match(line))}
        if reads - assigned or ("Up" in items and typed_line):
            out.append(i)
        for pattern in _WRITES:
            written.update(pattern.findall(text))
        opened = _VI.search(text)
        if opened:
            editing = opened.group(1)
        if editing and re.search(r":(w|wq|x)\b", text):
            written.add(editing)
        names |= assigned
        typed_line = typed_line or any("\n" in k for k in items)
    return out


def explain(step: Step, previous_state: dict[str, Any] | None,
            history: Sequence[tuple[str, str]] = ()) -> str:  # fmt: skip
    """The state change behind ``step``: the keys typed, the foreground program before and after
    (``bash -> python3``), the cursor's move, the screen rows that changed and the files the
    step created, changed or removed (from the privileged states collection records)."""
    before = previous_state or {}
    after = step.observation.state or {}
    words = action_words(step.action)
    parts = [f"keys: {' '.join(words)}"]
    if before.get("program") or after.get("program"):
        parts.append(f"program: {before.get('program') or '?'} -> {after.get('program') or '?'}")
    if after.get("alternate"):
        parts.append("full-screen program")
    if before.get("cursor") and after.get("cursor"):
        parts.append(f"cursor: {tuple(before['cursor'])} -> {tuple(after['cursor'])}")
    old, new = before.get("files") or {}, after.get("files") or {}
    changed = sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p))
    if changed:
        parts.append("files: " + ", ".join(changed[:8]))
    return "; ".join(parts)


def explain_text(action: str, observation: str, history: Sequence[tuple[str, str]] = ()) -> str:
    """The same rationale from the previous screen's text: the keys typed and the row they go
    to (the screen's last row)."""
    rows = observation.split("\n")
    return f"keys: {' '.join(action_words(action))}; typed at: {rows[-1] if rows else ''}"


__all__ = ["PROGRAMS", "action_type", "action_words", "command_families", "consistency_turns",
           "explain", "explain_text", "items_of", "score"]  # fmt: skip
