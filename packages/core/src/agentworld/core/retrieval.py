"""One index of real transitions, shared by the retrieval-only baseline ``nearest`` and by
retrieval-augmented world models (issue 47: R-WoM, "World Model Harness").

The index holds one document per distinct real transition of the training episodes (the same
action text after the same previous observation with the same next observation counts once; it
remembers every episode it came from and how often it was seen). A document is the action text,
the action's family (the domain's ``action_type``) and a short state key, the last line of the
observation before the action (for the terminal, the prompt with its working directory).
Neighbours of a request (action text, previous observation) are ranked

1. *exact* matches first: documents with the same action text after the same previous
   observation, most often seen first (first seen on a tie);
2. then by Okapi BM25 (``bm25s``: Lucene's variant, ``k1 = 1.5``, ``b = 0.75``) of the request's
   action text, family and state key, over lower-cased word and punctuation tokens (``-l`` and
   ``|`` count); equal scores in first-seen order.

:meth:`TransitionIndex.top_k` leaves out documents seen only in ``exclude_episode`` (training is
leave-one-episode-out) and repeats of an (action, observation) pair already returned.
:func:`retrieved_text` writes the neighbours in the fixed format a world model reads at the start
of its ``<think>`` block (``similar: $ ACTION`` then ``=> OBSERVATION``, each observation cut to
``max_chars``), within a token budget. :meth:`TransitionIndex.save` / :meth:`TransitionIndex.load`
keep the index with a checkpoint (``retrieval.jsonl``), so that a simulator rebuilds the very
index its model was trained with. ``bm25s`` is imported when the index is built
(``agentworld-core[retrieval]``), so importing this module stays light.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.core.domain_base import domain_hooks
from agentworld.core.extras import require
from agentworld.core.io import atomic_write
from agentworld.core.formats import OBS_CLOSE, OBS_OPEN, THINK_CLOSE, THINK_OPEN
from agentworld.core.types import Action, Episode

_TOKEN = r"(?u)\w+|[^\w\s]"
INDEX_FILE = "retrieval.jsonl"
FORMAT = "agentworld.retrieval/1"
CUT = " [...]"  # marks an observation cut to max_chars
TAGS = (THINK_OPEN, THINK_CLOSE, OBS_OPEN, OBS_CLOSE)  # never inside a block (rationales.TAGS)


def state_key(previous: str) -> str:
    """The last non-blank line of the observation before an action (``""`` when none)."""
    lines = [line for line in previous.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


@dataclass
class Transition:
    """One distinct real transition of the index.

    Attributes:
        action: The action text.
        previous: The observation text before the action.
        observation: The observation text after it.
        family: The action's family (the domain's ``action_type``; ``""`` without a domain).
        episodes: Ids of the episodes it was seen in, first seen first.
        count: How many steps of the indexed episodes it is.
        source: ``(episode index, step index)`` of its first occurrence in the episodes the
            index was built from (``(-1, -1)`` when loaded from a file).
    """

    action: str
    previous: str
    observation: str
    family: str = ""
    episodes: list[str] = field(default_factory=list)
    count: int = 0
    source: tuple[int, int] = (-1, -1)

    @property
    def episode(self) -> str:
        """The first episode it was seen in."""
        return self.episodes[0] if self.episodes else ""


class TransitionIndex:
    """The BM25 index of real transitions (module docstring: documents, ranking).

    Args:
        episodes: Indexed episodes (``[E]``, at least one step among them).
        domain: Optional domain object; its ``action_type`` is each document's family word.
        purpose: What the index is for, named when ``bm25s`` is missing.

    Raises:
        ValueError: no episode has a step.
        ModuleNotFoundError: ``bm25s`` is not installed (names the extra that brings it).
    """

    def __init__(self, episodes: Sequence[Episode], domain: Any = None,
                 purpose: str = "retrieval of real transitions") -> None:
        self.hooks = domain_hooks(domain) if domain is not None else None
        transitions: list[Transition] = []
        first: dict[tuple[str, str, str], int] = {}
        for e, episode in enumerate(episodes):
            previous = episode.initial_observation.text
            for t, step in enumerate(episode.steps):
                key = (step.action.text, previous, step.observation.text)
                index = first.setdefault(key, len(transitions))
                if index == len(transitions):
                    transitions.append(Transition(*key, self.family(step.action), source=(e, t)))
                found = transitions[index]
                found.count += 1
                if episode.id not in found.episodes:
                    found.episodes.append(episode.id)
                previous = step.observation.text
        self._build(transitions, purpose)

    @classmethod
    def from_transitions(cls, transitions: Sequence[Transition], domain: Any = None,
                         purpose: str = "retrieval of real transitions") -> TransitionIndex:
        """The index of ``transitions`` as :meth:`save` wrote them (same order, same ranking)."""
        index = cls.__new__(cls)
        index.hooks = domain_hooks(domain) if domain is not None else None
        index._build(list(transitions), purpose)
        return index

    def _build(self, transitions: list[Transition], purpose: str) -> None:
        if not transitions:
            raise ValueError(f"{purpose} needs training episodes with at least one step")
        self.transitions = transitions
        exact: dict[tuple[str, str], Counter[int]] = {}
        for i, tr in enumerate(transitions):
            exact.setdefault((tr.action, tr.previous), Counter())[i] += tr.count
        # most often seen, then first seen (Counter.most_common keeps insertion order on ties)
        self.exact = {key: [i for i, _ in counts.most_common()] for key, counts in exact.items()}
        bm25s = require("bm25s", "retrieval", purpose)
        tokenization = require("bm25s.tokenization", "retrieval", purpose)
        self.tokenizer = tokenization.Tokenizer(lower=True, splitter=_TOKEN, stopwords=[])
        docs = [f"{tr.action}\n{tr.family}\n{state_key(tr.previous)}" for tr in transitions]
        tokens = self.tokenizer.tokenize(docs, return_as="tuple", show_progress=False)
        self.bm25 = bm25s.BM25()
        self.bm25.index(tokens, show_progress=False)

    def family(self, action: Action) -> str:
        """The family word of ``action`` (``""`` without a domain)."""
        return self.hooks.action_type(action) if self.hooks is not None else ""

    def ranking(self, action_text: str, previous: str) -> list[int]:
        """Every document index, best first (module docstring's rules)."""
        import numpy as np

        query = f"{action_text}\n{self.family(Action(text=action_text))}\n{state_key(previous)}"
        ids = self.tokenizer.tokenize([query], update_vocab=False, return_as="ids",
                                      show_progress=False)
        scores = (self.bm25.get_scores(ids[0]) if ids and ids[0]
                  else np.zeros(len(self.transitions)))
        exact = self.exact.get((action_text, previous), [])
        order = np.argsort(-np.asarray(scores), kind="stable").tolist()
        if not exact:
            return order
        first = set(exact)
        return exact + [i for i in order if i not in first]

    def nearest(self, action_text: str, previous: str) -> int:
        """Index into :attr:`transitions` of the best match (0 when no token is known)."""
        hit = self.exact.get((action_text, previous))
        if hit:
            return hit[0]
        return self.ranking(action_text, previous)[0]

    def top_k(self, action_text: str, previous: str, k: int,
              exclude_episode: str | None = None) -> list[Transition]:
        """The ``k`` nearest real transitions (fewer when the index has fewer), best first.

        Args:
            action_text: The request's action text.
            previous: The observation text before it.
            k: How many (``0``: none).
            exclude_episode: An episode id whose own transitions are left out (a transition
                also seen in another episode stays).

        Returns:
            ``[<= k]`` transitions with distinct (action, observation) pairs.
        """
        out: list[Transition] = []
        seen: set[tuple[str, str]] = set()
        if k <= 0:
            return out
        for i in self.ranking(action_text, previous):
            tr = self.transitions[i]
            if exclude_episode is not None and tr.episodes == [exclude_episode]:
                continue
            if (tr.action, tr.observation) in seen:
                continue
            seen.add((tr.action, tr.observation))
            out.append(tr)
            if len(out) == k:
                break
        return out

    def save(self, directory: str | Path) -> Path:
        """Write the indexed transitions to ``directory/retrieval.jsonl`` (temporary file, then
        rename): a header line ``{"format": "agentworld.retrieval/1"}``, then one JSON object per
        transition (``action``, ``previous``, ``observation``, ``family``, ``episodes``,
        ``count``)."""
        path = Path(directory) / INDEX_FILE
        rows = [json.dumps({"format": FORMAT})] + [
            json.dumps({"action": t.action, "previous": t.previous, "observation": t.observation,
                        "family": t.family, "episodes": t.episodes, "count": t.count})
            for t in self.transitions]
        atomic_write(str(path), "\n".join(rows) + "\n")
        return path

    @classmethod
    def load(cls, directory: str | Path, domain: Any = None) -> TransitionIndex:
        """The index :meth:`save` wrote into ``directory``.

        Raises:
            FileNotFoundError: ``directory`` has no ``retrieval.jsonl``.
            ValueError: the file is not an index of this format (names the file and line).
        """
        path = Path(directory) / INDEX_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no retrieval index (the checkpoint's card asks for "
                                    "one; copy the whole checkpoint directory)")
        lines = path.read_text(encoding="utf-8").splitlines()
        try:
            header = json.loads(lines[0]) if lines else {}
            if header.get("format") != FORMAT:
                raise ValueError(f"{path}:1: expected the header {{\"format\": \"{FORMAT}\"}}")
            transitions = []
            for number, line in enumerate(lines[1:], 2):
                row = json.loads(line)
                transitions.append(Transition(row["action"], row["previous"], row["observation"],
                                              row["family"], list(row["episodes"]), row["count"]))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{path}: not a retrieval index ({error!r})") from None
        return cls.from_transitions(transitions, domain)


def _untagged(text: str) -> str:
    for tag in TAGS:
        text = text.replace(tag, "")
    return text


def transition_line(transition: Transition, max_chars: int) -> str:
    """``similar: $ ACTION`` and ``=> OBSERVATION`` (cut to ``max_chars`` characters, then
    ``" [...]"``), without the contract's tags, ending in a newline."""
    observation = _untagged(transition.observation).rstrip()
    if len(observation) > max_chars:
        observation = observation[:max_chars] + CUT
    return f"similar: $ {_untagged(transition.action).strip()}\n=> {observation}\n"


def retrieved_text(transitions: Sequence[Transition], max_chars: int, max_tokens: int,
                   count_tokens: Callable[[str], int]) -> str:
    """The retrieved block: :func:`transition_line` of each transition, best first, as many as
    fit in ``max_tokens`` tokens (``count_tokens`` of the block so far); ``""`` for none."""
    text = ""
    for transition in transitions:
        longer = text + transition_line(transition, max_chars)
        if count_tokens(longer) > max_tokens:
            break
        text = longer
    return text


def think_text(retrieved: str, rationale: str | None) -> str:
    """What goes in the ``<think>`` block: the retrieved block, then the rationale."""
    return retrieved + (rationale or "")
