"""Dataset files in every format agentworld reads and writes: what a row holds, how rows are stored.

What a row holds (the *kind*):

- ``"episodes"``: one :class:`~agentworld.core.types.Episode` per row (our native format).
- ``"agentworldbench"``: one AgentWorldBench row per evaluated turn
  (:mod:`agentworld.core.agentworldbench` owns that format; here it is only stored).
- ``"messages"``: one world-model SFT pair per row, as a chat: ``messages`` is the prompt the
  world model is given (system, history, the action) followed by the assistant target (the
  observation block, ``<think>rationale</think>`` first when rationales are given), plus
  ``episode_id``, ``domain`` and ``turn`` (0-based), and what the chat cannot hold (the
  step's ``reward``, ``terminated``, ``truncated``, ``state``, ``info`` and parsed tool
  ``call``; once per episode its ``task``, ``initial_state`` and ``metadata``), which other
  readers ignore. This is the "conversational" dataset of
  TRL's ``SFTTrainer`` (``assistant_only_loss=True`` trains on the last message) and
  LLaMA-Factory's ``sharegpt`` format with OpenAI-style tags (``examples/datasets/``).

How rows are stored (the *container*), told by the file name, never guessed:

- JSON Lines: ``.jsonl``, compressed ``.jsonl.gz``/``.jsonl.bz2``/``.jsonl.xz``/``.jsonl.zst``
  (fsspec infers the compression from the suffix);
- Parquet: ``.parquet`` (pyarrow: the ``parquet`` extra of agentworld-core). Columns of plain values (strings, numbers, lists of them, chat
  messages) are stored natively; a column holding free-form objects (an episode's ``steps``,
  ``task``, ``metadata``) is stored as JSON text, and its name listed in the file's schema
  metadata under ``agentworld.json_columns`` so that reading restores it.

``datasets.load_dataset("json" | "parquet", data_files=URL)`` loads every file written here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

import fsspec
from fsspec.compression import compr
from fsspec.utils import infer_compression

from agentworld.core.escapes import json_line, visible_strings
from agentworld.core.extras import require
from agentworld.core.formats import parse_prediction, sft_pair, split_system_message
from agentworld.core.io import MAX_LINE_BYTES, DatasetError, atomic_open, iter_jsonl, validate_rows
from agentworld.core.types import Action, Episode, Observation, Step, Task

Kind = Literal["episodes", "agentworldbench", "messages"]
KINDS: tuple[str, ...] = ("episodes", "agentworldbench", "messages")
COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst")
EXTENSIONS = (".jsonl", *(f".jsonl{c}" for c in COMPRESSIONS), ".parquet")
JSON_COLUMNS_KEY = b"agentworld.json_columns"
MESSAGE_FIELDS = ("messages", "episode_id", "domain", "turn")
ROW_FIELDS = ("episode_id", "reward", "terminated", "truncated", "state", "info")
"""What each ``messages`` row carries beyond the chat (:func:`messages_rows`)."""
FIRST_ROW_FIELDS = ("task", "initial_state", "metadata")
"""What the turn-0 row of an episode carries once."""

__all__ = [
    "EXTENSIONS",
    "KINDS",
    "container_of",
    "kind_of",
    "messages_rows",
    "read_any_episodes",
    "read_rows",
    "rows_to_episodes",
    "sniff",
    "write_as",
    "write_rows",
]


def container_of(url: str) -> Literal["jsonl", "parquet"]:
    """``"jsonl"`` or ``"parquet"`` by ``url``'s extension (see :data:`EXTENSIONS`).

    Raises:
        ValueError: any other extension, naming the valid ones.
    """
    name = url.rsplit("/", 1)[-1].lower()
    if name.endswith(".parquet"):
        return "parquet"
    for comp in ("", *COMPRESSIONS):
        if name.endswith(f".jsonl{comp}"):
            return "jsonl"
    raise ValueError(
        f"{url}: unknown dataset file type; valid extensions: {', '.join(EXTENSIONS)}"
    )


def _native(value: Any) -> bool:
    """Whether Parquet stores ``value`` as is: scalars, lists of scalars, lists of flat
    string-valued objects (chat messages)."""
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list):
        return all(
            (isinstance(v, dict) and v and all(isinstance(x, str) for x in v.values()))
            or (v is None or isinstance(v, str | int | float | bool))
            for v in value
        )
    return False


def write_rows(url: str, rows: Iterable[dict[str, Any]]) -> int:
    """Write ``rows`` (JSON-compatible dicts sharing their keys) to ``url`` atomically.

    Returns:
        The number of rows written.

    Raises:
        ValueError: ``url``'s extension is not one of :data:`EXTENSIONS`.
    """
    container = container_of(url)
    if container == "jsonl":
        n = 0
        comp = infer_compression(url)
        with atomic_open(url, "wb") as raw:
            f = compr[comp](raw, mode="wb") if comp else raw
            for row in rows:
                f.write(json_line(row))
                n += 1
            if comp:
                f.close()  # flush the compressor's trailer; `raw` stays open for the rename
        return n
    pa = require("pyarrow", "parquet", f"writing {url}")
    pq = require("pyarrow.parquet", "parquet", f"writing {url}")
    rows = [visible_strings(row) for row in rows]  # Arrow strings are UTF-8
    keys = list(dict.fromkeys(k for row in rows for k in row))
    encoded = [k for k in keys if not all(_native(row.get(k)) for row in rows)]
    columns = {
        k: [json.dumps(r.get(k), ensure_ascii=False) if k in encoded else r.get(k) for r in rows]
        for k in keys
    }
    table = pa.table(columns) if rows else pa.table({})
    table = table.replace_schema_metadata({JSON_COLUMNS_KEY: json.dumps(encoded).encode()})
    with atomic_open(url, "wb") as f:
        pq.write_table(table, f)
    return len(rows)


def read_rows(url: str, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row_number, row)`` for each row of ``url`` (1-based; a JSONL file's line number).

    Args:
        max_line_bytes: JSONL: the longest line read, bytes (:func:`agentworld.core.io.read_lines`).

    Raises:
        ValueError: an unknown extension.
        DatasetError: a JSONL line that is too long, nested too deeply or not a JSON object
            (:func:`agentworld.core.io.iter_jsonl`), or a Parquet file that pyarrow cannot
            read (naming the file).
        FileNotFoundError: ``url`` does not exist.
    """
    if container_of(url) == "jsonl":
        yield from iter_jsonl(url, max_line_bytes)
        return
    pa = require("pyarrow", "parquet", f"reading {url}")
    pq = require("pyarrow.parquet", "parquet", f"reading {url}")
    with fsspec.open(url, "rb") as f:
        try:
            table = pq.read_table(f)
        except pa.ArrowException as e:  # ArrowInvalid, ArrowIOError, ...: a damaged file
            raise DatasetError(url, None, f"not a readable Parquet file ({e})") from None
    meta = table.schema.metadata or {}
    encoded = set(json.loads(meta.get(JSON_COLUMNS_KEY, b"[]")))
    for number, row in enumerate(table.to_pylist(), start=1):
        try:
            yield number, {k: json.loads(v) if k in encoded and v is not None else v
                           for k, v in row.items()}
        except (json.JSONDecodeError, RecursionError, TypeError) as e:
            raise DatasetError(url, number, f"a JSON column does not hold JSON ({e})") from None


def kind_of(row: dict[str, Any]) -> Kind | None:
    """The kind of a row by its keys, ``None`` when it is none of :data:`KINDS`."""
    from agentworld.core.agentworldbench import is_record

    if is_record(row):
        return "agentworldbench"
    if "messages" in row and isinstance(row["messages"], list):
        return "messages"
    if {"steps", "domain"} <= set(row):
        return "episodes"
    return None


def sniff(url: str) -> Kind | None:
    """The kind of ``url``'s first row (``None`` for an empty file or an unknown row).

    Raises:
        ValueError: an unknown extension.
    """
    for _, row in read_rows(url):
        return kind_of(row)
    return None


def messages_rows(
    episodes: Iterable[Episode], rationales: Sequence[Sequence[str]] | None = None
) -> Iterator[dict[str, Any]]:
    """One chat row per SFT pair (:func:`~agentworld.core.formats.sft_pair`), in episode order.

    Args:
        episodes: The episodes.
        rationales: Optional ``rationales[i][t]`` for ``episodes[i].steps[t]``, kept in the
            target as ``<think>...</think>`` before the observation block.
    """
    for i, episode in enumerate(episodes):
        task = episode.task.model_dump(mode="json") if episode.task is not None else None
        for t, step in enumerate(episode.steps):
            why = rationales[i][t] if rationales is not None else None
            prompt, target = sft_pair(episode, t, why)
            row = {
                "messages": [*prompt, {"role": "assistant", "content": target}],
                "episode_id": episode.id,
                "domain": episode.domain,
                "turn": t,
                "reward": step.reward,
                "terminated": step.terminated,
                "truncated": step.truncated,
                "state": step.observation.state,
                "info": step.info,
                "call": ({"name": step.action.name, "arguments": step.action.arguments}
                         if step.action.name else None),
            }
            if t == 0:  # once per episode: the task, the state before the first step, metadata
                row |= {"task": task, "initial_state": episode.initial_observation.state,
                        "metadata": episode.metadata}
            yield row


def rows_to_episodes(
    url: str, rows: Iterable[tuple[int, dict[str, Any]]], lacking: set[str] | None = None
) -> list[Episode]:
    """Episodes back from ``messages`` rows: grouped by ``episode_id``, ordered by ``turn``;
    each row gives the action (its last user message), the observation (the block of its
    assistant message) and, where the row carries them (:func:`messages_rows` writes them), the
    step's ``reward``/``terminated``/``truncated``, ``state``, ``info`` and parsed tool
    ``call``, and on turn 0 the ``task``, the ``initial_state`` and the episode ``metadata``.
    Rationales are not part of an episode and are dropped. The names of the fields some row
    lacks (``reward``, ``task``, ...) are added to ``lacking`` when given.

    Raises:
        DatasetError: a row without messages ending in (user, assistant), or whose answer
            has no single observation block.
    """
    grouped: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}
    for number, row in rows:
        msgs = row.get("messages")
        if not isinstance(msgs, list) or [m.get("role") for m in msgs[-2:]] != ["user", "assistant"]:
            raise DatasetError(url, number, "messages must end with a user then an assistant message")
        key = str(row.get("episode_id", f"row{number}"))
        grouped.setdefault(key, []).append((int(row.get("turn", 0)), number, row))
        if lacking is not None:
            lacking.update(f for f in ROW_FIELDS if f not in row)
            if int(row.get("turn", 0)) == 0:
                lacking.update(f for f in FIRST_ROW_FIELDS if f not in row)
    episodes = []
    for key, items in grouped.items():
        items.sort(key=lambda x: x[0])
        first = items[0][2]["messages"]
        head, initial = split_system_message(first[0]["content"]) if first[0]["role"] == "system" else ("", "")
        steps = []
        for _, number, row in items:
            observation = parse_prediction(row["messages"][-1]["content"])
            if observation is None:
                raise DatasetError(url, number, "the assistant message has no single observation block")
            call = row.get("call") or {}
            reward = row.get("reward") or 0.0
            if isinstance(reward, bool) or not isinstance(reward, int | float) \
                    or not math.isfinite(reward):
                raise DatasetError(url, number, f"reward {reward!r:.40} is not a finite number")
            steps.append(Step(
                action=Action(text=row["messages"][-2]["content"], name=call.get("name"),
                              arguments=call.get("arguments")),
                observation=Observation(text=observation, state=row.get("state")),
                reward=float(reward),
                terminated=bool(row.get("terminated")),
                truncated=bool(row.get("truncated")),
                info=dict(row.get("info") or {}),
            ))
        opening = items[0][2]
        task = Task.model_validate(opening["task"]) if opening.get("task") else None
        if task is not None:  # system_message writes the task line itself
            head = head.removesuffix(f"Task given to the agent: {task.instruction}").rstrip()
        initial_state = opening.get("initial_state")
        episodes.append(Episode(id=key, domain=str(opening.get("domain", "unknown")), task=task,
                                system_prompt=head,
                                initial_observation=Observation(text=initial, state=initial_state),
                                steps=steps,
                                metadata={**(opening.get("metadata") or {}), "source": url}))
    return episodes


def read_any_episodes(url: str) -> tuple[list[Episode], str | None]:
    """Episodes from a file of any kind and container, and a note on what was read (``None``
    for plain episodes).

    Raises:
        ValueError: an unknown extension, or rows of no known kind (naming the kinds).
        DatasetError: an invalid row, naming the file and row.
    """
    from pydantic import ValidationError

    from agentworld.core import agentworldbench as awb

    kind = sniff(url)
    if kind == "agentworldbench" and container_of(url) == "jsonl":
        episodes, report = awb.read_episodes(url)
        return episodes, f"AgentWorldBench rows: {report.summary()}"
    if kind == "agentworldbench":
        def records() -> Iterator[tuple[int, awb.BenchRecord]]:
            for number, row in read_rows(url):
                try:
                    yield number, awb.BenchRecord.model_validate(row)
                except ValidationError as e:
                    raise DatasetError(url, number, f"AgentWorldBench row: {e.errors()[0]['msg']}") from None

        trajectories, report = awb.reconstruct(records())
        return [awb.to_episode(t) for t in trajectories], f"AgentWorldBench rows: {report.summary()}"
    if kind == "messages":
        lacking: set[str] = set()
        episodes = rows_to_episodes(url, read_rows(url), lacking)
        note = f"chat messages rows: {len(episodes)} episodes"
        if lacking:
            note += (f"; warning: some rows lack {', '.join(sorted(lacking))}: read as 0, false "
                     "or empty (rows written by other tools carry the chat alone)")
        return episodes, note
    if kind is None and next(read_rows(url), None) is None:
        return [], None  # an empty file
    if kind is None:
        raise ValueError(
            f"{url}: the first row is none of {', '.join(KINDS)} (an episode has 'domain' and "
            "'steps'; a chat row has 'messages'; an AgentWorldBench row has task, id, prompt, "
            "response, ...)"
        )
    return validate_rows(url, read_rows(url), Episode), None


def write_as(
    url: str,
    episodes: Sequence[Episode],
    kind: Kind,
    *,
    layout: str = "full",
    rationales: Sequence[Sequence[str]] | None = None,
) -> int:
    """Write ``episodes`` to ``url`` as rows of ``kind``, in the container its extension names.

    Args:
        layout: ``agentworldbench`` rows hold every turn (``"full"``) or the turns up to
            ``turn_idx`` (``"prefix"``).
        rationales: ``messages`` only: ``rationales[i][t]`` put in each target's ``<think>``.

    Returns:
        The number of rows written.

    Raises:
        ValueError: an unknown kind, layout or extension.
    """
    if kind == "episodes":
        rows: Iterable[dict[str, Any]] = (e.model_dump(mode="json") for e in episodes)
    elif kind == "messages":
        rows = messages_rows(episodes, rationales)
    elif kind == "agentworldbench":
        from agentworld.core import agentworldbench as awb

        if layout not in ("full", "prefix"):
            raise ValueError(f"layout must be 'full' or 'prefix', got {layout!r}")
        trajs = [awb.from_episode(e) for e in episodes]
        rows = (t.record(k, layout).model_dump() for t in trajs for k in t.turns)  # type: ignore[arg-type]
    else:
        raise ValueError(f"unknown dataset kind {kind!r}; valid: {', '.join(KINDS)}")
    container_of(url)  # fail on the name before any work
    return write_rows(url, rows)
