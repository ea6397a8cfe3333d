"""Wire types of the served environments, built on OpenEnv's own pydantic base classes.

An action is ``{"text": "ls -la"}`` (:class:`TextAction`). An observation serialises, as
OpenEnv's ``serialize_observation`` does, to ``{"observation": {"text", "metadata"},
"reward", "done", "metadata"}`` (:class:`TextObservation`); ``metadata`` (OpenEnv's own
field, repeated at the top level) is the step info: ``terminated``, ``truncated`` and the
environment's own info (for simulated envs ``raw``, the world model's answer, and
``parsed``; after a reset with a task, ``task_id`` and ``instruction``).
Source of the base types: ``openenv.core.env_server.types`` (openenv 0.10).
"""

from __future__ import annotations

from pydantic import Field

try:
    from openenv.core.env_server.types import Action, Observation, State
except ImportError as error:  # pragma: no cover - depends on the install
    raise ImportError(
        "`agentworld serve` needs the OpenEnv package: pip install 'agentworld-sim[openenv]'"
    ) from error

MAX_ACTION_CHARS = 16_384


class TextAction(Action):
    """One agent action as raw text (a shell command line for the terminal domain).

    Unknown fields are rejected (OpenEnv's ``Action`` forbids extras); ``text`` holds at most
    :data:`MAX_ACTION_CHARS` characters.
    """

    text: str = Field(max_length=MAX_ACTION_CHARS, description="The action text")


class TextObservation(Observation):
    """What the environment shows after a reset or a step.

    ``done`` is ``terminated or truncated``; ``reward`` is the step reward (``None`` at
    reset); ``metadata`` (inherited) holds ``terminated``, ``truncated`` and the env's
    info, JSON-encoded.
    """

    text: str = Field(description="The observation text exactly as the agent sees it")


class EpisodeState(State):
    """State of one served session: OpenEnv's ``episode_id`` and ``step_count`` plus
    ``session_id``, ``domain``, ``simulated`` and ``done``."""

    session_id: str | None = Field(default=None, description="Server session id")
    domain: str = Field(default="", description="Domain name")
    simulated: bool = Field(default=False, description="True when a world model simulates it")
    done: bool = Field(default=False, description="True once the episode has ended")
