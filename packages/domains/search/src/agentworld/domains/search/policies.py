"""Collection policies of the search domain: ``scripted`` (an expert) and ``random``.

Both are deterministic given ``reset(seed)`` (the collector calls it before each episode) and
the history. No LLM policy is offered: the kernel has no shared one.

* :class:`ScriptedExpert` follows the task's plan (``Task.setup``) but reads every fact from the
  observations: per hop it searches, picks the entity's page from the results, extracts it
  (with a ``goal`` half the time), reads the infobox row and stores it with ``dict_memory``;
  it then reads the memory back and answers. A docs question is searched verbatim, and the
  result pages are extracted in rank order until one holds the sentence.
* :class:`RandomPolicy` makes 4-10 plausible calls of every tool, some malformed, and a
  random answer at the end half the time.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from typing import Any

from agentworld.core.domain_base import PolicyBase
from agentworld.core.llm_policy import TOOL_AGENT_PROMPT, LLMPolicy, endpoint
from agentworld.core.toolcalls import ToolCallError, call_of
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.search.env import render_call
from agentworld.domains.search.tools import MEMORY_OPS

_RESULT = re.compile(r"^\[\d+\] (\S+)\nTitle: (.*)$", re.MULTILINE)


def results(observation: str) -> list[tuple[str, str]]:
    """``(url, title)`` of each result of a ``web_search`` observation, in order."""
    return _RESULT.findall(observation)


def infobox(page: str, field: str) -> str | None:
    """The value of row ``| field | value |`` of a page's infobox, else ``None``."""
    match = re.search(rf"^\| {re.escape(field)} \| (.*?) \|$", page, re.MULTILINE)
    return match.group(1) if match else None


def _key(field: str, entity: str) -> str:
    return f"{field.lower().replace(' ', '_')}:{entity}"


class ScriptedExpert(PolicyBase):
    """The expert (``name = "scripted"``); solves every task kind of
    :class:`~agentworld.domains.search.tasks.SearchTaskSampler`.

    Args:
        seed: Seed of its choices (goal or none, query wording); ``reset(seed)`` re-seeds.
    """

    name = "scripted"

    def __init__(self, seed: int = 0) -> None:
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Start an episode with ``random.Random(seed)``."""
        self.rng = random.Random(seed)
        self.stage, self.hop, self.values, self.candidates = "search", 0, [], []

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The next tool call, or ``None`` once it has answered (or has no task)."""
        if task is None or self.stage == "done":
            return None
        last = str(history[-1].text) if history else ""
        if task.setup.get("combine") == "docs":
            return self._docs(task, last)
        hops = task.setup["hops"]
        if self.stage == "extract":  # last: search results
            hop = hops[self.hop]
            entity = self._entity(hop)
            urls = [u for u, t in results(last) if t == f"{entity} - Worldpedia"]
            url = urls[0] if urls else f"https://en.worldpedia.org/wiki/{entity.replace(' ', '_')}"
            self.stage = "store"
            goal = {"goal": f"{hop['field']} of {entity}"} if self.rng.random() < 0.5 else {}
            return render_call("web_extractor", {"url": url, **goal})
        if self.stage == "store":  # last: the page
            hop = hops[self.hop]
            raw = infobox(last, hop["field"]) or ""
            value = raw.split(",")[hop["part"]].strip() if raw else ""
            self.values.append(value)
            self.hop += 1
            self.stage = "search" if self.hop < len(hops) else "recall"
            return render_call("dict_memory", {"operation": "add", "dict": {
                _key(hop["field"], self._entity(hop)): value}})
        if self.stage == "search":
            hop = hops[self.hop]
            entity = self._entity(hop)
            self.stage = "extract"
            words = [entity, hop["field"].lower()] if self.rng.random() < 0.7 else [entity]
            return render_call("web_search", {"query": " ".join(words)})
        if self.stage == "recall":
            self.stage = "answer"
            keys = [_key(h["field"], self._entity(h)) for h in hops]
            return render_call("dict_memory", {"operation": "retrieve", "key_list": keys})
        # answer, from the memory just read back
        memory = json.loads(last.split("\nKey not found")[0] or "{}") if last.startswith("{") else {}
        got = [memory.get(_key(h["field"], self._entity(h)), "") for h in hops]
        self.stage = "done"
        return render_call("answer", {"answer": self._combine(task, got)})

    def _entity(self, hop: dict) -> str:
        return self.values[0] if hop["entity"] == "$0" else hop["entity"]

    @staticmethod
    def _combine(task: Task, got: list[str]) -> str:
        mode, hops = task.setup["combine"], task.setup["hops"]
        if mode == "last":
            return got[-1]
        numbers = [int(v.replace(",", "")) if v.replace(",", "").isdigit() else 0 for v in got]
        pick = numbers.index(min(numbers) if mode == "earlier" else max(numbers))
        return hops[pick]["entity"]

    def _docs(self, task: Task, last: str) -> Action:
        sentence = task.setup["sentence"]
        if self.stage == "search":
            self.stage = "extract"
            return render_call("web_search", {"query": sentence})
        if self.stage == "extract":
            self.candidates = results(last)
            self.stage = "check"
        elif sentence in last:  # the page just extracted holds the sentence
            title = self.candidates[self.hop - 1][1]
            self.stage = "done"
            return render_call("answer", {"answer": title})
        if self.hop < len(self.candidates):
            self.hop += 1
            return render_call("web_extractor", {"url": self.candidates[self.hop - 1][0]})
        self.stage = "done"
        return render_call("answer", {"answer": "unknown"})


class RandomPolicy(PolicyBase):
    """Random plausible tool calls (``name = "random"``), 4-10 per episode.

    Args:
        seed: Seed of its choices; ``reset(seed)`` re-seeds.
        words: Query words (default :attr:`WORDS`, words of the built-in corpus).
        base_url: Where a guessed page lives (default the built-in corpus's wiki; ``""`` for a
            user corpus, whose pages are addressed by their path in its folder).
        known_urls: Pages it may open before any search showed them (a user corpus's own).
    """

    name = "random"
    WORDS = ("founded", "city", "river", "company", "population", "json", "parse", "file",
             "return", "string", "list", "time", "path", "thread", "random", "worldpedia")

    def __init__(self, seed: int = 0, words: Sequence[str] = (),
                 base_url: str = "https://en.worldpedia.org/wiki/",
                 known_urls: Sequence[str] = ()) -> None:
        self.words = tuple(words) or self.WORDS
        self.base_url, self.known_urls = base_url, list(known_urls)
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Start an episode with ``random.Random(seed)``."""
        self.rng = random.Random(seed)
        self.length = self.rng.randint(4, 10)
        self.keys: list[str] = []
        self.urls: list[str] = list(self.known_urls)

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """A random call; ``None`` after the episode's drawn length."""
        steps = sum(isinstance(item, Action) for item in history)
        if steps >= self.length:
            return None
        last = str(history[-1].text) if history else ""
        self.urls += [u for u, _ in results(last)]
        rng = self.rng
        words = last.split()[:40] or list(self.words)
        roll = rng.random()
        if steps == self.length - 1 and rng.random() < 0.5:
            return render_call("answer", {"answer": rng.choice(words)})
        if roll < 0.35:
            query = " ".join(rng.sample(list(self.words) + words, 2))
            return render_call("web_search", {"query": query})
        if roll < 0.6:
            url = rng.choice(self.urls) if self.urls and rng.random() < 0.8 else \
                f"{self.base_url}{rng.choice(self.words).capitalize()}"
            paged = self._page(history)
            if paged is not None:  # read a truncated page further
                return render_call("web_extractor", paged)
            if rng.random() < 0.25:  # a short window of the page
                return render_call("web_extractor", {"url": url, "max_length": rng.choice(
                    (200, 500, 1000))})
            return render_call("web_extractor", {"url": url})
        if roll < 0.9:
            op = rng.choice(MEMORY_OPS)
            if op in ("add", "update"):
                key = rng.choice(self.keys) if self.keys and op == "update" else rng.choice(self.words)
                self.keys.append(key)
                return render_call("dict_memory", {"operation": op, "dict": {key: rng.choice(words)}})
            if op in ("retrieve", "remove"):
                key = rng.choice(self.keys or list(self.words))
                return render_call("dict_memory", {"operation": op, "key_list": [key]})
            return render_call("dict_memory", {"operation": op})
        bad = rng.choice(['{"name": "web_search", "arguments": {"query": 3}}',
                          '{"name": "web_extractor", "arguments": {"url": "x", "max_length": 0}}',
                          '{"name": "browse", "arguments": {}}', "search for cities",
                          '{"name": "dict_memory", "arguments": {"operation": "add"}}'])
        return Action(text=bad)

    def _page(self, history: Sequence[Observation | Action]) -> dict[str, Any] | None:
        """The arguments that read on after a truncated ``web_extractor`` response, when the
        last one was truncated (half the time)."""
        if len(history) < 2 or not isinstance(history[-2], Action):
            return None
        match = _TRUNCATED.search(str(history[-1].text))
        if match is None or self.rng.random() < 0.5:
            return None
        try:
            _, arguments = call_of(history[-2])
        except ToolCallError:
            return None
        return {**arguments, "start_index": int(match.group(1))}


_TRUNCATED = re.compile(r"Call web_extractor with start_index (\d+) to read more\.\]$")

SEARCH_AGENT_PROMPT = (
    TOOL_AGENT_PROMPT
    + "\nTools: web_search {query | queries}, web_extractor {url | urls, goal?}, "
    "dict_memory {operation, ...}, answer {answer}. Answer with the answer tool."
)


def make_policies(seed: int = 0) -> dict[str, PolicyBase]:
    """Fresh policies by name: ``{"scripted": ScriptedExpert, "random": RandomPolicy}``, plus
    the shared ``llm`` (:mod:`agentworld.core.llm_policy`) when ``$AGENTWORLD_LLM_BASE_URL``
    is set."""
    out: dict[str, PolicyBase] = {"scripted": ScriptedExpert(seed), "random": RandomPolicy(seed)}
    if endpoint() is not None:
        out["llm"] = LLMPolicy(SEARCH_AGENT_PROMPT, seed=seed)
    return out
