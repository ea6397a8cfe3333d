"""The expert over a user's corpus (``name = "scripted"``): solves every kind of
:class:`~agentworld.domains.search.user_tasks.UserTaskSampler` reading each fact from the
observations.

Per hop it searches (the blanked sentence's words, the section heading, or the linking
document's title), takes the result whose title is the hop's document title (else the first),
extracts it (with a ``goal`` half the time) and reads the number that fills the blank, or
checks the section heading (trying the next result when the page lacks it), or finds the link
and extracts its target without a search. Each value read is stored with ``dict_memory``, read
back, and the answer combined from what came back.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Generator, Sequence
from typing import Any

from agentworld.core.domain_base import PolicyBase
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.search.env import render_call
from agentworld.domains.search.policies import results
from agentworld.domains.search.user_tasks import BLANK, NUMBER, resolve, value

Plan = Generator[Action, str, None]


def filler(observation: str, sentence: str) -> str | None:
    """The number that fills ``sentence``'s blank where the observation holds the sentence
    (whitespace between words may differ), else ``None``."""
    before, _, after = sentence.partition(BLANK)
    words = lambda part: r"\s+".join(re.escape(w) for w in part.split())  # noqa: E731
    pattern = (words(before) + (r"\s+" if before.endswith(" ") else "")
               + f"({NUMBER.pattern})" + (r"\s+" if after.startswith(" ") else "") + words(after))
    match = re.search(pattern, observation)
    return match.group(1) if match else None


def has_section(observation: str, heading: str) -> bool:
    """Whether a line of ``observation`` is the heading (Markdown ``#`` or a bare title)."""
    return any(line.lstrip("#").strip().strip("*_` ") == heading
               for line in observation.splitlines())


class UserExpert(PolicyBase):
    """The expert of a user's corpus.

    Args:
        seed: Seed of its choices (goal or none); ``reset(seed)`` re-seeds.
    """

    name = "scripted"

    def __init__(self, seed: int = 0) -> None:
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Start an episode with ``random.Random(seed)``."""
        self.rng = random.Random(seed)
        self.plan: Plan | None = None
        self.done = False

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The next tool call, or ``None`` once it has answered (or has no task)."""
        if task is None or self.done:
            return None
        try:
            if self.plan is None:
                self.plan = self._solve(task)
                return next(self.plan)
            return self.plan.send(str(history[-1].text) if history else "")
        except StopIteration:
            self.done = True
            return None

    def _extract(self, url: str, goal: str) -> Action:
        extra = {"goal": goal} if self.rng.random() < 0.5 else {}
        return render_call("web_extractor", {"url": url, **extra})

    def _solve(self, task: Task) -> Plan:
        hops, keys, target = task.setup["hops"], [], None
        for i, hop in enumerate(hops):
            if target is None:
                query = hop.get("section") or (hop["title"] if "link" in hop else
                                               " ".join(hop["sentence"].replace(BLANK, " ").split()))
                found = results((yield render_call("web_search", {"query": query})))
                urls = [u for u, t in found if t == hop["title"]] + [u for u, _ in found]
                url = urls[0] if urls else hop["doc"]
            else:
                url, urls = target, [target]
            target = None
            if "section" in hop:
                got = ""
                for candidate in dict.fromkeys(urls[:5] or [url]):
                    if has_section((yield self._extract(candidate, hop["section"])),
                                   hop["section"]):
                        got = candidate
                        break
            elif "link" in hop:
                page = yield render_call("web_extractor", {"url": url})
                text = r"\s+".join(re.escape(w) for w in hop["link"].split())
                link = re.search(rf"\[{text}\]\(([^)\s#]+)", page)
                target = resolve(url, link.group(1)) if link else hops[i + 1]["doc"]
                continue
            else:
                page = yield self._extract(url, " ".join(hop["sentence"].split()[:8]))
                got = filler(page, hop["sentence"]) or ""
            key = f"hop{i}:{hop['doc']}"
            keys.append((key, hop))
            yield render_call("dict_memory", {"operation": "add", "dict": {key: got}})
        recalled = yield render_call("dict_memory", {"operation": "retrieve",
                                                     "key_list": [k for k, _ in keys]})
        body = recalled.split("\nKey not found")[0]
        memory: dict[str, Any] = json.loads(body) if body.startswith("{") else {}
        got = [str(memory.get(k, "")) for k, _ in keys]
        if task.setup["combine"] == "larger":
            numbers = [value(g) if NUMBER.fullmatch(g) else float("-inf") for g in got]
            answer = keys[numbers.index(max(numbers))][1]["title"]
        else:
            answer = got[-1]
        yield render_call("answer", {"answer": answer or "unknown"})
