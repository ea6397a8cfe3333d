"""The optional capabilities of a world model: per-episode state, a checkpoint card, sessions.

World models are built by sim backends, not registered as plugins, so nothing checks them at
registration: a simulator asks for each capability by ``isinstance``
(:data:`WORLD_MODEL_CAPABILITIES`). The base interface,
:class:`~agentworld.core.protocols.WorldModel`, lives with the plugin interfaces in
:mod:`agentworld.core.protocols`, which re-exports everything here; ``docs/plugins.md``
documents each capability.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: the plugin manager imports this module without pydantic
    from agentworld.core.types import Prediction


@runtime_checkable
class EpisodicWorldModel(Protocol):
    """A world model that keeps per-episode state (e.g. pinned KV blocks) between steps:
    ``predict`` takes ``episode_ids`` (``[batch]``, one per request), ``fork_episode(source,
    new)`` copies that state and ``close_episode(episode_id)`` releases it."""

    def predict(
        self,
        requests: Sequence[list[dict[str, str]]],
        *,
        max_new_tokens: int | None = None,
        episode_ids: Sequence[str] | None = None,
    ) -> list[Prediction]: ...

    def fork_episode(self, source: str, new: str) -> None: ...

    def close_episode(self, episode_id: str) -> None: ...


@runtime_checkable
class CardedWorldModel(Protocol):
    """A world model that knows the answer format it was trained on (from its checkpoint
    card, :mod:`agentworld.core.card`): ``rewards`` (answers end with the reward footer) and
    ``history_window`` (turns of history per request; ``None``: all). A simulator on it
    defaults to both."""

    rewards: bool
    history_window: int | None


@runtime_checkable
class WorldModelSession(Protocol):
    """One episode held by a :class:`SessionWorldModel`: its chat history as text, kept beside
    the engine's token history, so that a step sends only the new action.

    ``append(action)`` predicts the observation after ``action`` and returns a
    ``concurrent.futures.Future`` of the :class:`~agentworld.core.types.Prediction` (its
    ``reward`` and ``terminated`` set when the session was opened with ``rewards``; a
    request that failed alone has ``observation=None`` and an ``error``). When the answer
    parsed (an observation, and with ``rewards`` a footer) the action and the answer,
    rewritten as :func:`~agentworld.core.formats.wrap_observation` writes it, join the
    history before the future resolves; otherwise the history is unchanged and the step can
    be retried. One ``append`` at a time per session. ``messages()`` copies the history,
    ``fork()`` opens a new session with a copy of it (and of the engine's state), ``close()``
    releases the engine's state. ``replace_last(answer)`` puts ``answer`` (an assistant
    message's text) in place of the last turn's answer, e.g. a real observation re-anchoring a
    simulated episode; the next ``append`` conditions on it. ``episode_id`` names the episode
    in the engine.
    """

    episode_id: str

    def messages(self) -> list[dict[str, str]]: ...

    def append(self, action: str, *, max_new_tokens: int | None = None) -> Future[Prediction]: ...

    def fork(self) -> WorldModelSession: ...

    def replace_last(self, answer: str) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class SessionWorldModel(Protocol):
    """A world model that holds episodes itself: ``open_session(system, rewards=...,
    history_window=..., episode_id=...)`` starts one from its system message (answers parsed
    with the reward footer when ``rewards``; each request shows the last ``history_window``
    turns, ``None``: all; ``episode_id``: its id, default a new one) and returns its
    :class:`WorldModelSession`. Concurrent ``append`` calls of many sessions are batched by
    the engine."""

    def open_session(
        self,
        system: str,
        *,
        rewards: bool = False,
        history_window: int | None = None,
        episode_id: str | None = None,
    ) -> WorldModelSession: ...


@runtime_checkable
class ClosableWorldModel(Protocol):
    """A world model holding resources to release when done (an HTTP client, an engine):
    ``close()``. Callers that load a world model close it when they have this."""

    def close(self) -> None: ...


#: World models are built by sim backends, not registered: these are asked for by ``isinstance``.
WORLD_MODEL_CAPABILITIES: tuple[type, ...] = (
    EpisodicWorldModel,
    CardedWorldModel,
    SessionWorldModel,
)
