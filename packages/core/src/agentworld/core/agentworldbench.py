"""AgentWorldBench JSONL import/export.

One record per transition, with the fields of the public AgentWorldBench
release (arXiv 2606.24597): ``task`` (domain), ``id`` (``{episode}-{turn}``),
``prompt`` (the chat history before the current action, a list of
``{"role", "content"}`` messages, system first), ``current_prompt`` (the
agent action of this turn), ``response`` (the reference answer: the real
next observation in a ``<predicted_observation>`` block), ``system_str``
(the system message), ``turn_idx`` (0-based) and ``total_turns``.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from agentworld.core.formats import parse_prediction, sft_pair, split_system_message, system_message
from agentworld.core.io import read_models, write_jsonl
from agentworld.core.types import Action, Episode, Observation, Step


class BenchRecord(BaseModel):
    """One AgentWorldBench transition record."""

    model_config = ConfigDict(extra="forbid")

    task: str
    id: str
    prompt: list[dict[str, str]]
    response: str
    current_prompt: str
    system_str: str
    turn_idx: int
    total_turns: int


def to_records(episode: Episode) -> list[BenchRecord]:
    """One record per step of ``episode`` (``len(episode.steps)`` records)."""
    records = []
    for turn, step in enumerate(episode.steps):
        messages, target = sft_pair(episode, turn)
        records.append(BenchRecord(
            task=episode.domain,
            id=f"{episode.id}-{turn}",
            prompt=messages[:-1],
            response=target,
            current_prompt=step.action.text,
            system_str=system_message(episode),
            turn_idx=turn,
            total_turns=len(episode.steps),
        ))
    return records


def export_jsonl(url: str, episodes: Iterable[Episode]) -> int:
    """Write every transition of ``episodes`` as AgentWorldBench JSONL (atomic). Returns records written."""
    return write_jsonl(url, (r for e in episodes for r in to_records(e)))


def import_jsonl(url: str) -> list[BenchRecord]:
    """Read AgentWorldBench JSONL records.

    Raises:
        agentworld.core.io.DatasetError: naming the file and line of an invalid record.
    """
    return read_models(url, BenchRecord)


def to_episodes(records: Iterable[BenchRecord]) -> list[Episode]:
    """Rebuild episodes from records, grouping by ``id`` minus its ``-{turn}`` suffix.

    The last record of each episode carries the whole history; structured
    state is not part of the format, so observations come back text-only.
    Records whose response has no observation block keep the raw response.
    """
    last: dict[str, BenchRecord] = {}
    for record in records:
        episode_id = record.id.rsplit("-", 1)[0]
        if episode_id not in last or record.turn_idx > last[episode_id].turn_idx:
            last[episode_id] = record
    episodes = []
    for episode_id, record in last.items():
        head, initial = split_system_message(record.system_str)
        turns = [*record.prompt[1:], {"role": "user", "content": record.current_prompt},
                 {"role": "assistant", "content": record.response}]
        steps = []
        for user, assistant in zip(turns[0::2], turns[1::2]):
            obs = parse_prediction(assistant["content"])
            steps.append(Step(action=Action(text=user["content"]),
                              observation=Observation(text=assistant["content"] if obs is None else obs)))
        episodes.append(Episode(id=episode_id, domain=record.task, system_prompt=head,
                                initial_observation=Observation(text=initial), steps=steps,
                                metadata={"source": "agentworldbench"}))
    return episodes
