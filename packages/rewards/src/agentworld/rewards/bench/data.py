"""The rows a bench run evaluates and the world-model request of each.

Rows come from every ``*_test.jsonl`` of a directory (sorted, as the public ``eval.py`` loads
them), deduplicated by ``(task, id, turn_idx)`` through trajectory reconstruction
(:func:`agentworld.core.agentworldbench.reconstruct`), so either list layout works and the
history always comes from the whole trajectory.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentworld.core import agentworldbench as awb
from agentworld.core.answers import clean_reference
from agentworld.core.formats import Message, sft_pair

PromptMode = Literal["public", "native"]
Key = tuple[str, int, int]


@dataclass(slots=True)
class Row:
    """One evaluated turn: its trajectory and 1-based ``turn``."""

    traj: awb.Trajectory
    turn: int

    @property
    def key(self) -> Key:
        return self.traj.task, self.traj.id, self.turn

    @property
    def domain(self) -> str:
        return self.traj.domain

    @property
    def reference(self) -> str:
        """The real observation without its marker (what the judge and the rules compare)."""
        return clean_reference(self.traj.responses[self.turn - 1])

    def messages(self, mode: PromptMode = "public") -> list[Message]:
        """The world-model request for this turn.

        ``public``: as ``eval.py infer`` builds it (PR #8): ``system_str``, then each earlier
        ``prompt``/``response`` pair verbatim as user/assistant messages, then
        ``prompt[turn_idx - 1]``. ``native``: as this project's trainers render the same
        trajectory (:func:`agentworld.core.formats.sft_pair`: bare actions, earlier
        observations in ``<predicted_observation>`` blocks).
        """
        t = self.turn - 1
        if mode == "native":
            return sft_pair(awb.to_episode(self.traj), t)[0]
        head = [{"role": "system", "content": self.traj.system_str}] if self.traj.system_str else []
        for prompt, response in zip(self.traj.prompts[:t], self.traj.responses[:t]):
            head += [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
        return [*head, {"role": "user", "content": self.traj.prompts[t]}]


def data_files(directory: str | Path) -> list[Path]:
    """The ``*_test.jsonl`` files of ``directory``, sorted.

    Raises:
        FileNotFoundError: ``directory`` is not a directory or holds no ``*_test.jsonl``.
    """
    root = Path(directory)
    files = sorted(root.glob("*_test.jsonl")) if root.is_dir() else []
    if not files:
        raise FileNotFoundError(
            f"{directory} holds no *_test.jsonl files (AgentWorldBench rows, one file per "
            "domain such as terminal_test.jsonl)"
        )
    return files


def load_rows(
    directory: str | Path, *, domains: list[str] | None = None, limit: int | None = None
) -> tuple[list[Row], awb.ReconstructReport]:
    """Every evaluated turn of the directory, in file and trajectory order.

    Args:
        domains: Keep only these domains (``None``: all).
        limit: Keep at most this many rows per domain (``None``: all).

    Raises:
        FileNotFoundError: as :func:`data_files`.
        agentworld.core.io.DatasetError: a bad row (file, line and field named).
    """
    files = data_files(directory)
    streams = (((line, r) for line, r in awb.iter_records(str(f))) for f in files)
    trajs, report = awb.reconstruct(itertools.chain.from_iterable(streams))
    rows, per_domain = [], {}
    for traj in trajs:
        if domains and traj.domain not in domains:
            continue
        for turn in traj.turns:
            n = per_domain.get(traj.domain, 0)
            if limit is not None and n >= limit:
                break
            per_domain[traj.domain] = n + 1
            rows.append(Row(traj, turn))
    return rows, report
