"""AgentWorldBench records: reading, writing and trajectory reconstruction.

The format is the public benchmark's (QwenLM/Qwen-AgentWorld ``README.md`` "Data Format" and
``eval/eval.py``; arXiv 2606.24597): one JSON object per evaluated turn, one file per domain
(``{domain}_test.jsonl``), with

- ``task`` (str; the part after the last ``/`` is the domain), ``id`` (int: the trajectory,
  shared by its rows), ``prompt`` (list of str: action prompts ``### Turn k\\n**Action:**\\n...``),
  ``response`` (list of str: real observations ``**Environment Observation:**\\n...``),
  ``current_prompt`` (str), ``system_str`` (this sample's world-model system prompt),
  ``turn_idx`` (int, 1-based: the target is ``response[turn_idx - 1]``), ``total_turns`` (int).
- ``prompt``/``response`` hold either every turn of the trajectory (``layout="full"``) or the
  turns up to ``turn_idx`` (``layout="prefix"``); readers accept both.

Lines are split on ``\\n`` only (texts may hold U+2028/U+2029), files are streamed, and
``.gz``/``.bz2``/... compression is inferred from the name. Errors name the file, the line and
the field. The function API (:func:`iter_records`, :func:`reconstruct`, :func:`read_episodes`,
:func:`export_jsonl`, :func:`sniff`) is what the CLI and the bench use.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError, model_validator

from agentworld.core.answers import DOMAINS, GUI_DOMAINS, OBSERVATION_MARKER
from agentworld.core.escapes import json_line
from agentworld.core.formats import split_system_message, system_message
from agentworld.core.io import DatasetError, atomic_open, iter_jsonl
from agentworld.core.carried import carried, restore
from agentworld.core.types import Action, Episode, Observation, Step

LAST_ROW_ONLY = ("states", "info")
"""What a trajectory carries on its last row only (it can be large)."""

PUBLIC_TURNS = {"mcp": 286, "search": 458, "terminal": 354, "swe": 472, "android": 200,
                "web": 200, "os": 200}
"""Evaluated turns per domain in the public release (2,170 in all)."""
FIELDS = ("task", "id", "prompt", "response", "current_prompt", "system_str", "turn_idx",
          "total_turns")
Layout = Literal["full", "prefix"]
_HEADER = re.compile(r"### Turn (\d+)\n\*\*Action:\*\*\n")

__all__ = ["DOMAINS", "GUI_DOMAINS", "BenchRecord", "Trajectory", "ReconstructReport",
           "domain_of", "iter_records", "read_records", "write_records", "reconstruct",
           "to_episode", "from_episode", "read_episodes", "export_jsonl", "sniff"]


def _finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class BenchRecord(BaseModel):
    """One evaluated turn. Fields beyond the card's (a predictions file's ``gen``...) are
    ignored."""

    model_config = ConfigDict(extra="ignore")

    task: StrictStr
    id: StrictInt
    prompt: list[StrictStr]
    response: list[StrictStr]
    current_prompt: StrictStr
    system_str: StrictStr
    turn_idx: StrictInt = Field(ge=1)
    total_turns: StrictInt = Field(ge=1)
    # Ours, beyond the card's fields (readers of the public format ignore it): what an episode
    # has that the rows cannot otherwise carry (:func:`carried`).
    agentworld: dict[str, Any] | None = Field(default=None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _turn_in_lists(self) -> BenchRecord:
        for name in ("prompt", "response"):
            n = len(getattr(self, name))
            if self.turn_idx > n:
                raise ValueError(f"turn_idx {self.turn_idx} (1-based) exceeds len({name}) = {n}")
        if self.turn_idx > self.total_turns:
            raise ValueError(f"turn_idx {self.turn_idx} exceeds total_turns {self.total_turns}")
        rewards = (self.agentworld or {}).get("rewards") or []
        bad = next((r for r in rewards if not _finite_number(r)), None) if isinstance(
            rewards, list) else rewards
        if bad is not None:
            raise ValueError(f"agentworld.rewards holds {bad!r:.40}; rewards are finite numbers")
        return self

    @property
    def domain(self) -> str:
        return domain_of(self.task)

    @property
    def key(self) -> tuple[str, int, int]:
        """``(task, id, turn_idx)``: what identifies a row."""
        return self.task, self.id, self.turn_idx


def domain_of(task: str) -> str:
    """The domain of a ``task`` value: the part after its last ``/`` (``"x/mcp"`` -> ``mcp``)."""
    return task.rsplit("/", 1)[-1]


def action_prompt(turn: int, action: str) -> str:
    """The card's action prompt of 1-based ``turn``: ``### Turn k\\n**Action:**\\n{action}``."""
    return f"### Turn {turn}\n**Action:**\n{action}"


def observation_response(text: str) -> str:
    """The card's response: ``**Environment Observation:**\\n{text}``."""
    return f"{OBSERVATION_MARKER}\n{text}"


def _error_of(url: str, line: int, error: ValidationError) -> DatasetError:
    first = error.errors()[0]
    message = first["msg"].removeprefix("Value error, ")
    # a cross-field check (no location) names its field first
    where = ".".join(str(p) for p in first["loc"]) or message.split(" ", 1)[0]
    return DatasetError(url, line, f"AgentWorldBench field {where}: {message}")


def iter_records(url: str) -> Iterator[tuple[int, BenchRecord]]:
    """Stream ``(line_number, record)`` from an AgentWorldBench JSONL file (1-based lines,
    blank lines skipped, split on ``\\n`` only).

    Raises:
        DatasetError: a line that is too long, not UTF-8, not a JSON object (as
            :func:`agentworld.core.io.iter_jsonl` reads it), or not a valid record; the
            message names the file, the line and the field.
        FileNotFoundError: ``url`` does not exist.
    """
    for number, data in iter_jsonl(url):
        try:
            yield number, BenchRecord.model_validate(data)
        except ValidationError as e:
            raise _error_of(url, number, e) from None


def read_records(url: str) -> list[BenchRecord]:
    """Every record of ``url`` in file order (see :func:`iter_records`)."""
    return [record for _, record in iter_records(url)]


def write_records(url: str, records: Iterable[BenchRecord]) -> int:
    """Write records atomically, one JSON object per line (UTF-8, U+2028 kept raw). Returns
    the number written."""
    count = 0
    with atomic_open(url, "wb") as f:
        for record in records:
            f.write(json_line(record.model_dump(mode="json")))
            count += 1
    return count


@dataclass(slots=True)
class Trajectory:
    """One trajectory rebuilt from its rows: all known turns and the evaluated ones.

    ``prompts``/``responses`` ``[num_turns]`` are the raw strings of the longest rows seen;
    ``turns`` the sorted 1-based turn indices that had a row.
    """

    task: str
    id: int
    system_str: str
    prompts: list[str]
    responses: list[str]
    total_turns: int
    turns: list[int] = field(default_factory=list)
    carried: dict[str, Any] | None = None  # see :func:`carried`

    @property
    def domain(self) -> str:
        return domain_of(self.task)

    def record(self, turn: int, layout: Layout = "full") -> BenchRecord:
        """The row of 1-based ``turn`` (``prefix``: lists cut after ``turn``)."""
        end = len(self.prompts) if layout == "full" else turn
        extra = None
        if self.carried is not None:
            extra = {k: v for k, v in self.carried.items() if k not in LAST_ROW_ONLY}
            if turn == max(self.turns, default=turn):  # states and infos once, on the last row
                extra |= {k: self.carried.get(k) for k in LAST_ROW_ONLY}
        return BenchRecord(task=self.task, id=self.id, prompt=self.prompts[:end],
                           response=self.responses[:end], current_prompt=self.prompts[turn - 1],
                           system_str=self.system_str, turn_idx=turn, total_turns=self.total_turns,
                           agentworld=extra)


@dataclass(slots=True)
class ReconstructReport:
    """What :func:`reconstruct` saw: rows read, trajectories built, and the rows it dropped.

    ``duplicates``: ``(line, task, id, turn_idx)`` of rows whose key an earlier row had;
    ``conflicts``: ``(line, task, id, what)`` of rows disagreeing with an earlier row of their
    trajectory (the longer lists are kept); ``texts_only``: trajectories none of whose rows has
    the ``agentworld`` field (:mod:`agentworld.core.carried`), warned about in :meth:`summary`.
    """

    rows: int = 0
    trajectories: int = 0
    texts_only: int = 0
    duplicates: list[tuple[int, str, int, int]] = field(default_factory=list)
    conflicts: list[tuple[int, str, int, str]] = field(default_factory=list)

    def summary(self) -> str:
        text = f"{self.rows} rows, {self.trajectories} trajectories"
        if self.duplicates:
            shown = ", ".join(f"line {n} ({t} id {i} turn {k})" for n, t, i, k in self.duplicates[:5])
            text += f"; {len(self.duplicates)} duplicate (task, id, turn_idx) dropped: {shown}"
        if self.conflicts:
            text += f"; {len(self.conflicts)} rows disagree with their trajectory"
        if self.texts_only:
            text += (f"; warning: {self.texts_only} of {self.trajectories} trajectories have "
                     "only texts (no 'agentworld' field, as public rows): their rewards read "
                     "as 0, terminated as false, and they have no task, states, step info or "
                     "episode id beyond the row id")
        return text


def _agrees(a: list[str], b: list[str]) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def reconstruct(rows: Iterable[tuple[int, BenchRecord]]) -> tuple[list[Trajectory], ReconstructReport]:
    """Group rows by ``(task, id)`` into trajectories, each rebuilt once.

    A row whose ``(task, id, turn_idx)`` was seen before is a duplicate: dropped and reported.
    Lists are merged by keeping the longest (so ``"prefix"`` rows, each holding the turns up to
    its own, rebuild the whole trajectory in any row order); a row whose lists or ``system_str`` disagree with
    its trajectory's is reported as a conflict. Trajectories come out in first-seen order.
    """
    report = ReconstructReport()
    built: dict[tuple[str, int], Trajectory] = {}
    seen: set[tuple[str, int, int]] = set()
    for line, record in rows:
        report.rows += 1
        if record.key in seen:
            report.duplicates.append((line, *record.key))
            continue
        seen.add(record.key)
        key = (record.task, record.id)
        traj = built.get(key)
        if traj is None:
            traj = built[key] = Trajectory(record.task, record.id, record.system_str,
                                           list(record.prompt), list(record.response),
                                           record.total_turns)
        if record.agentworld is not None:
            traj.carried = {**(traj.carried or {}), **{k: v for k, v in record.agentworld.items()
                                                       if v is not None}}
        # every row, ours too: a "prefix" row holds the turns up to its own (the longest wins)
        if record.system_str != traj.system_str:
            report.conflicts.append((line, record.task, record.id, "system_str"))
        elif not (_agrees(record.prompt, traj.prompts) and _agrees(record.response, traj.responses)):
            report.conflicts.append((line, record.task, record.id, "prompt/response"))
        if len(record.prompt) > len(traj.prompts):
            traj.prompts = list(record.prompt)
        if len(record.response) > len(traj.responses):
            traj.responses = list(record.response)
        traj.total_turns = max(traj.total_turns, record.total_turns)
        traj.turns.append(record.turn_idx)
    for traj in built.values():
        traj.turns.sort()
    report.trajectories = len(built)
    report.texts_only = sum(t.carried is None for t in built.values())
    return list(built.values()), report


def to_episode(traj: Trajectory) -> Episode:
    """The trajectory as an :class:`Episode` (text only: the format has no structured state).

    Actions lose the ``### Turn k\\n**Action:**\\n`` header and observations the
    ``**Environment Observation:**\\n`` marker when they have exactly that form; otherwise the
    raw string is the text and is kept in ``step.info`` (``awb_prompt``/``awb_response``) so
    that :func:`from_episode` writes it back unchanged. The system prompt is ``system_str``
    (split into prompt and initial observation only where that rebuilds it exactly).
    """
    steps = []
    for i, (prompt, response) in enumerate(zip(traj.prompts, traj.responses)):
        header = _HEADER.match(prompt)
        action = prompt[header.end():] if header and int(header.group(1)) == i + 1 else prompt
        marker = OBSERVATION_MARKER + "\n"
        obs = response[len(marker):] if response.startswith(marker) else response
        info: dict[str, Any] = {}
        if action_prompt(i + 1, action) != prompt:
            info["awb_prompt"] = prompt
        if observation_response(obs) != response:
            info["awb_response"] = response
        steps.append(Step(action=Action(text=action), observation=Observation(text=obs), info=info))
    meta: dict[str, Any] = {"source": "agentworldbench",
                            "awb": {"task": traj.task, "id": traj.id, "turns": traj.turns,
                                    "total_turns": traj.total_turns}}
    head, initial = split_system_message(traj.system_str)
    episode = Episode(id=str(traj.id), domain=traj.domain, system_prompt=head,
                      initial_observation=Observation(text=initial), steps=steps, metadata=meta)
    if traj.carried is not None:
        restore(episode, traj.carried)
        if episode.task is not None:  # system_message writes the task line itself
            line = f"Task given to the agent: {episode.task.instruction}"
            episode.system_prompt = episode.system_prompt.removesuffix(line).rstrip()
    if system_message(episode) != traj.system_str:
        state = episode.initial_observation.state
        episode.system_prompt = traj.system_str
        episode.initial_observation = Observation(text="", state=state)
        episode.metadata["verbatim_system"] = True
    return episode


def _int_id(episode_id: str) -> int:
    """An integer trajectory id: the id itself when decimal, else a stable 48-bit hash."""
    if episode_id.isdigit():
        return int(episode_id)
    return int(hashlib.sha256(episode_id.encode()).hexdigest()[:12], 16)


def from_episode(episode: Episode) -> Trajectory:
    """The episode as a trajectory: ``system_str`` is :func:`~agentworld.core.formats.system_message`,
    every step a turn (or the turns an imported episode recorded), the id an int."""
    awb = episode.metadata.get("awb") or {}
    prompts = [s.info.get("awb_prompt") or action_prompt(k, s.action.text)
               for k, s in enumerate(episode.steps, start=1)]
    responses = [s.info.get("awb_response") or observation_response(s.observation.text)
                 for s in episode.steps]
    n = len(episode.steps)
    turns = [t for t in awb.get("turns", range(1, n + 1)) if 1 <= t <= n]
    return Trajectory(task=awb.get("task", episode.domain), id=awb.get("id", _int_id(episode.id)),
                      system_str=system_message(episode), prompts=prompts, responses=responses,
                      total_turns=max(awb.get("total_turns", n), n, 1), turns=turns,
                      carried=carried(episode))


def read_episodes(url: str) -> tuple[list[Episode], ReconstructReport]:
    """Episodes of an AgentWorldBench file, one per trajectory, and the reconstruction report.

    Raises:
        DatasetError: as :func:`iter_records`.
    """
    trajectories, report = reconstruct(iter_records(url))
    return [to_episode(t) for t in trajectories], report


def export_jsonl(url: str, episodes: Iterable[Episode], layout: Layout = "full") -> int:
    """Write every evaluated turn of ``episodes`` as AgentWorldBench rows (atomic). Returns rows.

    Raises:
        ValueError: ``layout`` is not ``full`` or ``prefix``.
    """
    if layout not in ("full", "prefix"):
        raise ValueError(f"layout must be 'full' or 'prefix', got {layout!r}")
    trajs = (from_episode(e) for e in episodes)
    return write_records(url, (t.record(k, layout) for t in trajs for k in t.turns))


def is_record(keys: Iterable[str]) -> bool:
    """Whether a JSON object's keys are those of an AgentWorldBench row."""
    return set(FIELDS) <= set(keys)


def sniff(url: str) -> str | None:
    """``"agentworldbench"`` or ``"episodes"`` by the keys of the first non-blank line of
    ``url``; ``None`` when it is neither (or not JSON)."""
    try:
        first = next(iter_jsonl(url), None)
    except DatasetError:
        return None
    if first is None:
        return None
    record = first[1]
    if not isinstance(record, dict):
        return None
    if is_record(record):
        return "agentworldbench"
    return "episodes" if {"steps", "domain"} <= set(record) else None
