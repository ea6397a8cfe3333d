"""What an episode has beyond its texts, carried through AgentWorldBench rows.

The public rows hold actions, observations and the system prompt only. :func:`carried` is the
rest (id, task, metadata, per-step rewards and ends, structured states), written into each
row's ``agentworld`` field, which readers of the public format ignore; :func:`restore` puts it
back when the rows are read (:mod:`agentworld.core.agentworldbench`).
"""

from __future__ import annotations

from typing import Any

from agentworld.core.types import Episode, Task

TEXT_INFO = ("awb_prompt", "awb_response")
"""``Step.info`` keys that hold a row's own texts (rebuilt from the row, never carried)."""


def carried(episode: Episode) -> dict[str, Any] | None:
    """What an episode has beyond its texts, written into each row's ``agentworld`` field so
    that ``convert`` back rebuilds it: the episode id, the task, the metadata, each step's
    ``reward``/``terminated``/``truncated``/``info``, each action's parsed tool call (``name``,
    ``arguments``), and the structured states (initial, then one per step; on the
    trajectory's last row only, as they can be large). Public readers of the
    format ignore the field. ``None`` when the texts are all there is (rows read from the
    public data, written back unchanged)."""
    metadata = {k: v for k, v in episode.metadata.items()
                if k not in ("awb", "source", "verbatim_system")}
    states = [episode.initial_observation.state, *(s.observation.state for s in episode.steps)]
    infos = [{k: v for k, v in s.info.items() if k not in TEXT_INFO} for s in episode.steps]
    calls = [{"name": s.action.name, "arguments": s.action.arguments} if s.action.name else None
             for s in episode.steps]
    plain = (
        episode.task is None and not metadata and not any(states) and not any(infos)
        and not any(calls)
        and not any(s.reward or s.terminated or s.truncated for s in episode.steps)
        and episode.id == str((episode.metadata.get("awb") or {}).get("id", episode.id))
    )
    if plain:
        return None
    return {
        "episode_id": episode.id,
        "task": episode.task.model_dump(mode="json") if episode.task is not None else None,
        "metadata": metadata,
        "rewards": [s.reward for s in episode.steps],
        "terminated": [s.terminated for s in episode.steps],
        "truncated": [s.truncated for s in episode.steps],
        "info": infos,
        "calls": calls,
        "states": states,
    }


def restore(episode: Episode, carry: dict[str, Any]) -> None:
    """Put back into ``episode`` (in place) what :func:`carried` kept; lists shorter than the
    steps (a row subset) restore what they hold."""
    if carry.get("episode_id"):
        episode.id = str(carry["episode_id"])
    if carry.get("task"):
        episode.task = Task.model_validate(carry["task"])
    episode.metadata.update(carry.get("metadata") or {})
    for step, reward in zip(episode.steps, carry.get("rewards") or []):
        step.reward = float(reward)
    for step, ended in zip(episode.steps, carry.get("terminated") or []):
        step.terminated = bool(ended)
    for step, cut in zip(episode.steps, carry.get("truncated") or []):
        step.truncated = bool(cut)
    for step, info in zip(episode.steps, carry.get("info") or []):
        step.info.update(info or {})
    for step, call in zip(episode.steps, carry.get("calls") or []):
        if call:
            step.action.name, step.action.arguments = call["name"], call.get("arguments")
    states = carry.get("states") or []
    if states:
        episode.initial_observation.state = states[0]
        for step, state in zip(episode.steps, states[1:]):
            step.observation.state = state
