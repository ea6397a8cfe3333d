"""Collection policies of the interactive terminal: ``scripted``, ``random`` and ``llm``.

* :class:`ScriptedExpert` solves every task kind of :mod:`agentworld.domains.tty.tasks`
  through its interactive program (the python3 REPL, ``less``, ``vi``, ``top``, ``sleep`` and
  ``C-c``), reading what it needs off the screen (the word ``less`` shows on a line, the task
  count of ``top``). Its style is seeded: keys sent one item at a time or together, ``Enter``
  as a key name or as ``\\n``, a look at the files first or not.
* :class:`RandomPolicy` types plausible keystrokes: commands, interactive programs started and
  driven with their keys (and sometimes left running), control keys, and now and then a
  malformed action; 4-12 steps.
* ``llm``: the shared :class:`agentworld.core.llm_policy.LLMPolicy` with a keystroke agent's
  prompt (:data:`AGENT_PROMPT`) and a reply parser for keystroke lists (:func:`parse_reply`).

All are deterministic given ``reset(seed)`` and the observations.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Generator, Sequence
from typing import Any

from agentworld.core.domain_base import PolicyBase
from agentworld.core.llm_policy import LLMPolicy, endpoint
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.tty.keys import ActionError, parse_action, render_action

Plan = Generator[list[tuple[str, float]], str, None]
_TASKS = re.compile(r"Tasks:\s+(\d+) total")


def _enter(rng: random.Random, text: str, duration: float) -> list[tuple[str, float]]:
    """``text`` then Enter: one item with ``\\n`` or two items (``Enter`` as a key name)."""
    if rng.random() < 0.7:
        return [(text + "\n", duration)]
    return [(text, 0.05), ("Enter", duration)]


def _plan(task: Task, rng: random.Random) -> Plan:
    goal: dict[str, Any] = task.check.get("goal", {})
    if rng.random() < 0.3:  # look around first
        yield _enter(rng, rng.choice(["ls", "ls -l", "pwd"]), 0.1)
    kind = task.kind
    if kind == "repl":
        yield _enter(rng, "python3", 0.5)
        if rng.random() < 0.5:
            yield _enter(rng, f"value = {goal['expr']}", 0.1) + _enter(rng, "print(value)", 0.1)
            expr = "value"
        else:
            expr = goal["expr"]
        yield _enter(rng, f"open({goal['out']!r}, 'w').write(str({expr}))", 0.1)
        yield [("C-d", 0.2)] if rng.random() < 0.7 else _enter(rng, "exit()", 0.2)
        if rng.random() < 0.5:
            yield _enter(rng, f"cat {goal['out']}", 0.1)
    elif kind == "pager":
        yield _enter(rng, f"less {goal['file']}", 0.3)
        screen = yield [(f"{goal['line']}g", 0.2)]
        first = screen.splitlines()[0] if screen else ""
        word = first.split()[-1] if first.split() else "unknown"
        yield [("q", 0.1)]
        yield _enter(rng, f"echo {word} > {goal['out']}", 0.1)
    elif kind in ("edit", "replace"):
        yield _enter(rng, f"vi {goal['file']}", 0.3)
        if kind == "edit":
            yield [("G", 0.05), ("o", 0.05), (goal["text"], 0.05), ("Escape", 0.1)]
        else:
            yield _enter(rng, f":%s/{goal['old']}/{goal['new']}/g", 0.1)
        yield _enter(rng, ":wq", 0.2)
        if rng.random() < 0.6:
            yield _enter(rng, f"cat {goal['file']}", 0.1)
    elif kind == "interrupt":
        yield _enter(rng, f"sleep {goal['seconds']}", rng.choice([0.3, 0.5, 1.0]))
        yield [("C-c", 0.1)]
        yield _enter(rng, f"touch {goal['out']}", 0.1)
    elif kind == "top":
        screen = yield _enter(rng, "top", 1.0)
        match = _TASKS.search(screen)
        yield [("q", 0.1)]
        yield _enter(rng, f"echo {match.group(1) if match else 0} > {goal['out']}", 0.1)
    else:  # shell
        yield _enter(rng, goal.get("command", "ls"), 0.1)


class ScriptedExpert(PolicyBase):
    """The expert (``name = "scripted"``): solves every task kind, 2-7 steps.

    Args:
        seed: Seed of its style; ``reset(seed)`` re-seeds.
    """

    name = "scripted"

    def __init__(self, seed: int = 0) -> None:
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Start an episode with ``random.Random(seed)``."""
        self.rng = random.Random(seed)
        self._plan: Plan | None = None
        self._task_id: str | None = None

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The next keystroke list, or ``None`` when the plan is done (or there is no task)."""
        if task is None:
            return None
        screen = str(history[-1].text) if history else ""
        try:
            if self._plan is None or self._task_id != task.id:
                self._plan, self._task_id = _plan(task, self.rng), task.id
                items = next(self._plan)
            else:
                items = self._plan.send(screen)
        except StopIteration:
            return None
        return Action(text=render_action(items))


_COMMANDS = ("ls", "ls -l", "pwd", "date +%Y", "echo hello", "whoami", "cat {f}", "wc -l {f}",
             "head -n 3 {f}", "tail -n 2 {f}", "grep -c e {f}", "echo $((RANDOM % 1 + 7))",
             "cd /tmp", "cd ~", "clear", "history | tail -n 3")  # fmt: skip
_PROGRAMS = ("python3", "less {f}", "vi {f}", "top", "sleep 30", "cat", "bc -q", "man ls")
_KEYS = ("q", "C-c", "C-d", "Escape", ":q!\n", "Enter", "Up", "Down", "j", "k", "G", "g",
         "Space", "BSpace", "Tab", "1+2\n", "print('hi')\n", "x = 5\n", "x\n", "/e\n", "ihello",
         ":wq\n", "h", "C-l", "C-z", "fg\n")  # fmt: skip
_BAD = ('[{"keystrokes": 5, "duration": 0.1}]', "ls -la", '{"keystrokes": "ls\\n"}',
        '[{"keys": "ls\\n", "duration": 1}]', '[{"keystrokes": "ls\\n", "duration": -1}]',
        '[{"keystrokes": "pwd\\n", "duration": 0.1}')  # fmt: skip


class RandomPolicy(PolicyBase):
    """Random plausible keystrokes (``name = "random"``), 4-12 steps per episode.

    Args:
        seed: Seed of its choices; ``reset(seed)`` re-seeds.
    """

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Start an episode with ``random.Random(seed)``."""
        self.rng = random.Random(seed)
        self.length = self.rng.randint(4, 12)

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """A random keystroke list; ``None`` after the episode's drawn length."""
        steps = sum(isinstance(item, Action) for item in history)
        if steps >= self.length:
            return None
        rng = self.rng
        files = sorted((task.setup.get("files") or {}) if task else {}) or ["notes.txt"]
        roll = rng.random()
        if roll < 1 / 12:
            return Action(text=rng.choice(_BAD))
        if roll < 0.4:
            text = rng.choice(_COMMANDS).format(f=rng.choice(files))
            items = _enter(rng, text, rng.choice([0.05, 0.1, 0.2]))
        elif roll < 0.6:
            text = rng.choice(_PROGRAMS).format(f=rng.choice(files))
            items = _enter(rng, text, rng.choice([0.3, 0.5, 1.0]))
        else:
            items = [(rng.choice(_KEYS), rng.choice([0.05, 0.1, 0.3]))
                     for _ in range(rng.randint(1, 3))]  # fmt: skip
        return Action(text=render_action(items))


AGENT_PROMPT = """You operate a Linux terminal (bash, 80 x 24) to complete a task, by typing keys.
Reply with a JSON list of keystroke items and nothing else, for example
[{"keystrokes": "ls -l\\n", "duration": 0.1}]
"keystrokes" is typed as is ("\\n" is Enter), unless it is a whole tmux key name: C-c, C-d, Escape,
Enter, Tab, Up, Down, Left, Right, BSpace. "duration" is the seconds to wait after typing it.
You see the screen after each reply. Interactive programs (python3, less, vi, top) are allowed.
When the task is done, reply DONE."""


def parse_reply(reply: str) -> Action | None:
    """The action of a model ``reply``: its first JSON list of keystroke items (in a code fence
    or not), or a Terminus answer object's ``commands``, rendered as the public rows write it.
    ``None`` for ``DONE``, an empty reply, a ``task_complete`` answer with no commands, or no
    such list."""
    text = reply.strip()
    if not text or text.rstrip(".").upper() == "DONE":
        return None
    decoder = json.JSONDecoder()
    for start in (i for i, c in enumerate(text) if c in "[{"):
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and value.get("task_complete") and not value.get("commands"):
            return None
        try:
            items = parse_action(json.dumps(value))
        except ActionError:
            continue
        return Action(text=render_action(items)) if items else None
    return None


def make_policies(seed: int = 0) -> dict[str, PolicyBase]:
    """Fresh policies by name: ``{"scripted", "random"}``, plus ``"llm"`` when
    ``$AGENTWORLD_LLM_BASE_URL`` is set."""
    out: dict[str, PolicyBase] = {"scripted": ScriptedExpert(seed), "random": RandomPolicy(seed)}
    if endpoint() is not None:
        out["llm"] = LLMPolicy(AGENT_PROMPT, parse_reply, seed)
    return out


__all__ = ["AGENT_PROMPT", "RandomPolicy", "ScriptedExpert", "make_policies", "parse_reply"]
