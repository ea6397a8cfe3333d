"""The retrieval-only baseline ``nearest``: answer the observation of the most similar real
transition of the *training* episodes, unmodified.

A fidelity report asks whether a trained world model beats looking the answer up. The index is
built once per load from the training episodes (never the evaluated ones): one document per
real step, its action text, the action's family (the domain's ``action_type``) and a short
state key, the last line of the observation before the action (for the terminal, the prompt
with its working directory). A request is answered by

1. an *exact* match: a training step with the same action text after the same previous
   observation (the observation seen most often after it; the first seen on a tie);
2. else the best Okapi BM25 match (``bm25s``: Lucene's variant, ``k1 = 1.5``, ``b = 0.75``)
   of the request's action text, family and state key, over lower-cased word and punctuation
   tokens (``-l`` and ``|`` count); the first training step on a tie or when no token is known.

The answer is the training step's whole assistant target
(:func:`agentworld.core.formats.step_answer`:
the reward footer included when its episode has one). ``bm25s`` is imported when the index is
built (``agentworld-core[retrieval]``), so importing this module stays light.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from agentworld.core.domain_base import domain_hooks
from agentworld.core.extras import require
from agentworld.core.formats import previous_observation, step_answer
from agentworld.core.types import Action, Episode, Prediction

_TOKEN = r"(?u)\w+|[^\w\s]"


def state_key(previous: str) -> str:
    """The last non-blank line of the observation before an action (``""`` when none)."""
    lines = [line for line in previous.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


class NearestWorldModel:
    """A :class:`~agentworld.core.protocols.WorldModel` answering the nearest training transition.

    Args:
        episodes: The training episodes indexed (``[E]``, at least one step among them).
        domain: Optional domain; its ``action_type`` is the family word of each document.

    Raises:
        ValueError: no episode has a step.
        ModuleNotFoundError: ``bm25s`` is not installed (names the extra that brings it).
    """

    def __init__(self, episodes: Sequence[Episode], domain: Any = None) -> None:
        self.hooks = domain_hooks(domain) if domain is not None else None
        self.answers: list[tuple[str, str]] = []  # (assistant target, observation text)
        docs: list[str] = []
        exact: dict[tuple[str, str], Counter[int]] = {}
        first: dict[tuple[str, str, str], int] = {}
        for episode in episodes:
            previous = episode.initial_observation.text
            for step in episode.steps:
                index = first.setdefault(
                    (step.action.text, previous, step.observation.text), len(self.answers))
                if index == len(self.answers):
                    self.answers.append((step_answer(episode, step), step.observation.text))
                    docs.append(self._document(step.action, previous))
                exact.setdefault((step.action.text, previous), Counter())[index] += 1
                previous = step.observation.text
        if not self.answers:
            raise ValueError("the nearest baseline needs training episodes with at least one step")
        # most often seen, then first seen (Counter.most_common keeps insertion order on ties)
        self.exact = {key: counts.most_common(1)[0][0] for key, counts in exact.items()}
        purpose = "the retrieval-only baseline nearest"
        bm25s = require("bm25s", "retrieval", purpose)
        tokenization = require("bm25s.tokenization", "retrieval", purpose)
        self.tokenizer = tokenization.Tokenizer(lower=True, splitter=_TOKEN, stopwords=[])
        tokens = self.tokenizer.tokenize(docs, return_as="tuple", show_progress=False)
        self.bm25 = bm25s.BM25()
        self.bm25.index(tokens, show_progress=False)

    def _document(self, action: Action, previous: str) -> str:
        family = self.hooks.action_type(action) if self.hooks is not None else ""
        return f"{action.text}\n{family}\n{state_key(previous)}"

    def nearest(self, action_text: str, previous: str) -> int:
        """Index into :attr:`answers` of the training step answering ``action_text`` after the
        observation ``previous`` (the module docstring's rules)."""
        hit = self.exact.get((action_text, previous))
        if hit is not None:
            return hit
        import numpy as np

        ids = self.tokenizer.tokenize([self._document(Action(text=action_text), previous)],
                                      update_vocab=False, return_as="ids", show_progress=False)
        scores = self.bm25.get_scores(ids[0]) if ids and ids[0] else np.zeros(1)
        return int(np.argmax(scores))  # the first of the best; 0 when no token is known

    def predict(
        self, requests: Sequence[list[dict[str, str]]], *, max_new_tokens: int | None = None
    ) -> list[Prediction]:
        """One answer per ``[system, (user, assistant) * T, user]`` request; ``max_new_tokens``
        is ignored (a real answer is given whole)."""
        out = []
        for messages in requests:
            action = messages[-1]["content"] if messages and messages[-1]["role"] == "user" else ""
            text, observation = self.answers[self.nearest(action, previous_observation(messages))]
            out.append(Prediction(text=text, observation=observation))
        return out


class NearestBackend:
    """Sim backend ``nearest``: loads a :class:`NearestWorldModel` over ``train_data``.

    Args:
        sim_backend: The registry's sim-backend lookup (for ``make_env``, as
            :class:`~agentworld.core.builtins.ConstantBackend`).
    """

    name = "nearest"

    def __init__(self, sim_backend: Any) -> None:
        self.sim_backend = sim_backend

    def load(self, path: str | None = None, *, domain: Any = None, train_data: str | None = None,
             **options: Any) -> NearestWorldModel:
        """The baseline over the training episodes at ``train_data`` (any dataset format,
        :func:`agentworld.core.dataformats.read_any_episodes`); ``path`` and other options are
        ignored.

        Raises:
            ValueError: no ``train_data``, or it holds no step.
        """
        if not train_data:
            raise ValueError("the nearest baseline needs train_data: the URL of the training "
                             "episodes it looks answers up in")
        from agentworld.core.dataformats import read_any_episodes

        return NearestWorldModel(read_any_episodes(train_data)[0], domain)

    def make_env(self, world_model: Any, domain: Any = None, **options: Any) -> Any:
        """A simulated environment on ``world_model`` (agentworld-sim's ``hf`` backend's)."""
        return self.sim_backend("hf").make_env(world_model, domain=domain, **options)

