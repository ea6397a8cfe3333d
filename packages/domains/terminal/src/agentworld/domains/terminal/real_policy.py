"""The ``real`` policy: command lines from real manuals, run on real files.

Its corpus (``data/real/``, written by ``scripts/extract_real_corpus.py``; every entry names its
source and license) holds command lines from the examples of GNU info manuals and Debian man
pages, and short excerpts of real files: configuration files of ``/etc``, package logs, CSV and
JSON data shipped with Python packages, Python and shell sources. Each episode takes one source
(``info:sed``, ``man:awk``, ...): its task puts 2-4 real file excerpts in the home directory
(``Task.kind`` is the source, so whole sources can be held out: ``[collect]
realistic_sources``), and the policy runs 4-9 of the source's command lines in the manual's
order, with their file operands adapted to the episode's tree
(:func:`agentworld.domains.terminal.real_paths.adapt`), after a first look around half of the
time (``ls``, ``cat`` or ``head`` of a file).
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentworld.core.types import Action, Observation, Task
from agentworld.domains.terminal.policy_base import SeededPolicy, steps_taken
from agentworld.domains.terminal.real_paths import adapt

DATA_DIR = Path(__file__).parent / "data" / "real"


@functools.cache
def corpus() -> tuple[dict[str, tuple[str, ...]], tuple[dict[str, str], ...]]:
    """``({source: command lines in manual order}, file entries)`` of ``data/real/``.

    Raises:
        FileNotFoundError: the corpus files are missing (run ``scripts/extract_real_corpus.py``).
    """
    commands: dict[str, list[str]] = {}
    for entry in json.loads((DATA_DIR / "commands.json").read_text(encoding="utf-8")):
        commands.setdefault(entry["source"], []).append(entry["command"])
    files = json.loads((DATA_DIR / "files.json").read_text(encoding="utf-8"))
    return {s: tuple(c) for s, c in commands.items()}, tuple(files)


def sources() -> list[str]:
    """The corpus's command sources, sorted (``info:coreutils``, ``man:awk``, ...)."""
    return sorted(corpus()[0])


def home_tree(files: Sequence[dict[str, Any]], rng: random.Random,
              k: tuple[int, int] = (2, 4)) -> tuple[dict[str, Any], list[str], list[str]]:
    """A home directory of ``k`` real file excerpts drawn from ``files``:
    ``(setup, file paths, directories)``, paths relative to the home directory."""
    chosen = rng.sample(list(files), min(len(files), rng.randint(*k)))
    setup_files = {f["name"]: f["text"] for f in chosen}
    dirs = sorted({name.rsplit("/", 1)[0] for name in setup_files if "/" in name})
    return {"files": setup_files, "dirs": dirs}, sorted(setup_files), dirs


class RealPolicy(SeededPolicy):
    """Runs a real source's command lines on real files (``name = "real"``); a
    :class:`~agentworld.core.protocols.TaskingPolicy` with unbounded tasks.

    Args:
        seed: Seed of the policy's random choices; ``reset(seed)`` re-seeds.
        sources: The sources to draw from (default: every source of the corpus).
    """

    name = "real"
    num_tasks: int | None = None

    def __init__(self, seed: int = 0, sources: Sequence[str] | None = None) -> None:
        super().__init__(seed)
        known = corpus()[0]
        self.sources = sorted(sources) if sources is not None else sorted(known)
        unknown = [s for s in self.sources if s not in known]
        if unknown or not self.sources:
            raise ValueError(f"unknown real sources {unknown}; valid: {', '.join(sorted(known))}")
        self._plan: list[str] = []

    def task(self, seed: int) -> Task:
        """The task of the episode played with ``seed``: a source, drawn with weight the square
        root of its number of command lines, and 2-4 real files in the home directory."""
        rng = random.Random(f"real-task-{seed}")
        commands = corpus()[0]
        weights = [len(commands[s]) ** 0.5 for s in self.sources]
        source = rng.choices(self.sources, weights)[0]
        setup, _, _ = home_tree(corpus()[1], rng)
        return Task(id=f"real-{seed}-{source}", domain="terminal", kind=source, setup=setup,
                    instruction=f"Try the examples of {source} on the files in your home directory.")

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The next command of the episode's plan (made at the first step), or ``None``."""
        i = steps_taken(history)
        if i == 0:
            self._plan = self._make_plan(task)
        return Action(text=self._plan[i]) if i < len(self._plan) else None

    def _make_plan(self, task: Task | None) -> list[str]:
        rng = self.rng
        commands = corpus()[0].get(task.kind if task else "", ())
        if not commands:
            return []
        setup = task.setup if task else {}
        files = sorted(setup.get("files", {}))
        dirs = list(setup.get("dirs", []))
        plan = []
        if files and rng.random() < 0.5:
            f = rng.choice(files)
            plan.append(rng.choice(["ls", f"ls {rng.choice(dirs or ['.'])}", f"cat {f}",
                                    f"head -n 5 {f}", "ls -l"]))
        start = rng.randrange(len(commands))
        picked = sorted(rng.sample(range(len(commands)), min(len(commands), rng.randint(4, 9))),
                        key=lambda j: (j - start) % len(commands))
        mapping: dict[str, str] = {}
        plan += [adapt(commands[j], files, dirs, rng, mapping) for j in picked]
        return plan
