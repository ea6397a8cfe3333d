"""``SearchDomain``: the search domain as the framework sees it."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentworld.core.call_rationales import call_rationale, signatures
from agentworld.core.domain_base import DomainBase
from agentworld.core.types import Action, Episode, Observation, Step, Task
from agentworld.domains.search import scorer, tools
from agentworld.domains.search.corpus import DOC_MODULES, cache_dir
from agentworld.domains.search.env import SearchEnv, call_of
from agentworld.domains.search.options import SearchEnvOptions
from agentworld.domains.search.policies import RandomPolicy, make_policies
from agentworld.domains.search.tasks import KINDS, SearchTaskSampler
from agentworld.domains.search.user_corpus import load_user_engine
from agentworld.domains.search.user_policy import UserExpert
from agentworld.domains.search.user_tasks import UserTaskSampler

SYSTEM_PROMPT = """You simulate a web search and browsing environment: given one tool call, reply with the exact response the tool returns.

Tools and their responses:
- web_search {"query": str} or {"queries": [str, ...]}: up to 10 results per query, each as
  [N] URL
  Title: page title
  Snippet: a sentence of the page
  Date: publication date or N/A
  separated by blank lines; a batch heads each query's results with ## Results for "QUERY"; no match gives No results found for "QUERY".
- web_extractor {"url": str} (or "urls"), optional "goal", "max_length" (default 5000), "start_index" (default 0): the page's content in Markdown (headings, infobox tables, paragraphs); with a goal, only the heading and the blocks and table rows that share a word with it; at most max_length characters from start_index, then [Content truncated: characters START-END of TOTAL shown. Call web_extractor with start_index END to read more.] when more follows; an unknown URL gives Error: failed to fetch URL: page not found (HTTP 404).
- dict_memory {"operation": add|update|retrieve|retrieve_all|remove|remove_all, "dict": {...}, "key_list": [...]}: Successfully added items of [keys] to memory. / Successfully updated items of [keys] in memory. / the retrieved items as indented JSON (then Key not found: [keys] for missing ones) / Successfully removed items of [keys] from memory. / Successfully cleared all memory. Memory starts empty.
- answer {"answer": str}: Answer submitted: ANSWER, then Result: correct or Result: incorrect.
A malformed call gives one line starting with Error:.

Tool definitions:
"""

TOOL_SIGNATURES = signatures(tools.TOOL_DEFINITIONS)


class SearchDomain(DomainBase):
    """The ``search`` domain (:class:`agentworld.core.domain_base.DomainBase`).

    Args:
        world_seed: Seed of the corpus's fictional world (environments and tasks use it).
        corpus: A folder of the user's own documents (``--set corpus=DIR``): searched
            instead of the built-in corpus, tasks and the ``scripted`` expert of
            :mod:`agentworld.domains.search.user_tasks` and
            :mod:`agentworld.domains.search.user_policy`.
    """

    name = "search"
    version = "0.1.0"
    env_options = SearchEnvOptions

    def __init__(self, world_seed: int = 0, corpus: Path | None = None) -> None:
        self.world_seed = world_seed
        self.corpus = corpus

    def for_environment(self, options: dict[str, Any]) -> SearchDomain | None:
        """The domain of ``options``' ``corpus`` and ``world_seed`` (``None`` without them)."""
        if options.get("corpus") is None and "world_seed" not in options:
            return None
        return SearchDomain(options.get("world_seed", self.world_seed), options.get("corpus"))

    def system_prompt(self, task: Task | None) -> str:
        """The world-model system prompt: the tools' responses and their JSON definitions
        (as the public AgentWorldBench search prompt lists them), plus, for a task, the
        simulation instruction with its target query and reference answer."""
        text = SYSTEM_PROMPT + json.dumps(tools.TOOL_DEFINITIONS, ensure_ascii=False, indent=2)
        if task is None:
            return text
        return (f"{text}\n\nSimulation instruction:\nTarget query: {task.instruction}\n"
                f"Reference answer: {task.check.get('answer', '')}")

    def make_env(self, **kwargs: Any) -> SearchEnv:
        """A real :class:`SearchEnv` of this domain's world (``kwargs`` go to its constructor).

        Raises:
            OSError: the corpus cache cannot be written.
        """
        kwargs.setdefault("world_seed", self.world_seed)
        if self.corpus is not None:
            kwargs.setdefault("corpus", self.corpus)
        return SearchEnv(**kwargs)

    def tasks(self) -> SearchTaskSampler | UserTaskSampler:
        """The seeded task sampler (kinds :data:`~agentworld.domains.search.tasks.KINDS`;
        with a user corpus, :data:`~agentworld.domains.search.user_tasks.USER_KINDS`).

        Raises:
            ValueError: the user corpus holds no document, or gives no question.
        """
        if self.corpus is None:
            return SearchTaskSampler(self.world_seed)
        engine, digest = load_user_engine(str(Path(self.corpus).resolve()))
        return UserTaskSampler(engine.pages, digest)

    def policies(self) -> dict[str, Any]:
        """Fresh ``{"scripted": ScriptedExpert, "random": RandomPolicy}`` (seed 0); with a
        user corpus the ``scripted`` one is :class:`UserExpert` and ``random`` queries the
        words of its titles."""
        out = make_policies()
        if self.corpus is not None:
            engine, _ = load_user_engine(str(Path(self.corpus).resolve()))
            words = sorted({w.lower() for p in engine.pages for w in re.findall(r"[A-Za-z]{4,}",
                                                                                 p.title)})
            out["scripted"] = UserExpert()
            out["random"] = RandomPolicy(words=words, base_url="",
                                         known_urls=[p.url for p in engine.pages])
        return out

    def score(self, predicted: str, reference: Observation) -> float:
        """Structural fidelity in [0, 1] (:func:`agentworld.domains.search.scorer.score`)."""
        return scorer.score(predicted, reference)

    def action_type(self, action: Action) -> str:
        """The tool name of the call (``web_search``, ``web_extractor``, ``dict_memory``,
        ``answer``, or an unknown name), ``invalid`` for an action that is no tool call."""
        try:
            return call_of(action)[0]
        except tools.ToolError:
            return "invalid"

    def command_families(self, action: Action) -> set[str]:
        """The tool, plus ``dict_memory:OPERATION``, ``web_search:batch``,
        ``web_extractor:goal`` or ``web_extractor:paged`` when they apply."""
        try:
            name, arguments = call_of(action)
        except tools.ToolError:
            return {"invalid"}
        out = {name}
        if name == "dict_memory" and isinstance(arguments.get("operation"), str):
            out.add(f"dict_memory:{arguments['operation']}")
        if name == "web_search" and "queries" in arguments:
            out.add("web_search:batch")
        if name == "web_extractor" and arguments.get("goal"):
            out.add("web_extractor:goal")
        if name == "web_extractor" and ("start_index" in arguments or "max_length" in arguments):
            out.add("web_extractor:paged")
        return out

    def consistency_turns(self, episode: Episode) -> list[int]:
        """Steps whose real observation depends on the episode itself: a ``dict_memory`` call
        other than ``add``/``remove_all`` after an earlier ``add`` or ``update``, and a
        ``web_extractor`` of a URL an earlier observation showed."""
        out, stored, shown = [], False, ""
        for i, step in enumerate(episode.steps):
            try:
                name, arguments = call_of(step.action)
            except tools.ToolError:
                name, arguments = "", {}
            if name == "dict_memory":
                op = arguments.get("operation")
                if stored and op not in ("add", "remove_all"):
                    out.append(i)
                stored = stored or op in ("add", "update", "set")
            elif name == "web_extractor":
                urls = arguments.get("urls") or [arguments.get("url")]
                if any(isinstance(u, str) and u and u in shown for u in urls):
                    out.append(i)
            shown += "\n" + step.observation.text
        return out

    def is_deterministic(self, action: Action, reference: Observation | None = None) -> bool:
        """``dict_memory`` responses and tool errors follow from the history alone."""
        return self.action_type(action) in ("dict_memory", "invalid")

    def explain(
        self,
        step: Step,
        previous_state: dict[str, Any] | None,
        history: Sequence[tuple[str, str]] = (),
    ) -> str:
        """The call, its check against the tool definitions and the earlier turns that made or
        showed what it refers to (a URL a search listed, a memory key added before)
        (:func:`agentworld.core.call_rationales.call_rationale`)."""
        return call_rationale(step.action.text, history, TOOL_SIGNATURES)

    def explain_text(
        self, action: str, observation: str, history: Sequence[tuple[str, str]] = ()
    ) -> str:
        """:meth:`explain` from text alone (it reads no state)."""
        return call_rationale(action, history, TOOL_SIGNATURES)

    def verify(self, observation: str, task: Task | None) -> tuple[float, bool] | None:
        """``(1.0, True)`` after a correct answer, ``(0.0, True)`` after a wrong one, else
        ``None``."""
        if observation.startswith("Answer submitted:"):
            return (1.0, True) if observation.rstrip().endswith("Result: correct") else (0.0, True)
        return None

    def initial_observation(self, task: Task | None) -> str:
        """The reset observation: the task's question (``""`` without a task)."""
        return task.instruction if task else ""

    def describe(self) -> dict[str, str]:
        return {
            "environment": "real: BM25 search (bm25s; Robertson & Zaragoza 2009) over an "
                           "offline corpus",
            "corpus": f"docstrings of {len(DOC_MODULES)} Python stdlib modules + seeded "
                      f"fictional world {self.world_seed}; cached in {cache_dir()}; or your "
                      "own documents with --set corpus=DIR (Markdown, HTML, text)",
            "tools": ", ".join(tools.TOOLS),
            "task kinds": ", ".join(KINDS),
            "policies": "scripted, random, llm (with AGENTWORLD_LLM_BASE_URL)",
        }
