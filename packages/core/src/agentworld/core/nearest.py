"""The retrieval-only baseline ``nearest``: answer the observation of the most similar real
transition of the *training* episodes, unmodified.

A fidelity report asks whether a trained world model beats looking the answer up. The index
(:class:`agentworld.core.retrieval.TransitionIndex`, the one retrieval-augmented world models
use) is built once per load from the training episodes (never the evaluated ones): one document
per distinct real step, its action text, the action's family (the domain's ``action_type``) and
a short state key, the last line of the observation before the action. A request is answered by
the index's best match: an exact match (same action text after the same previous observation,
the one seen most often, the first seen on a tie), else the best Okapi BM25 match (the first
training step on a tie or when no token is known).

The answer is the training step's whole assistant target
(:func:`agentworld.core.formats.step_answer`:
the reward footer included when its episode has one). ``bm25s`` is imported when the index is
built (``agentworld-core[retrieval]``), so importing this module stays light.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentworld.core.formats import previous_observation, step_answer
from agentworld.core.retrieval import TransitionIndex, state_key
from agentworld.core.types import Episode, Prediction

__all__ = ["NearestBackend", "NearestWorldModel", "state_key"]


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
        try:
            self.index = TransitionIndex(episodes, domain, "the retrieval-only baseline nearest")
        except ValueError:
            raise ValueError("the nearest baseline needs training episodes with at least one "
                             "step") from None
        self.answers: list[tuple[str, str]] = []  # (assistant target, observation text)
        for tr in self.index.transitions:
            episode = episodes[tr.source[0]]
            self.answers.append((step_answer(episode, episode.steps[tr.source[1]]),
                                 tr.observation))

    def nearest(self, action_text: str, previous: str) -> int:
        """Index into :attr:`answers` of the training step answering ``action_text`` after the
        observation ``previous`` (the module docstring's rules)."""
        return self.index.nearest(action_text, previous)

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

