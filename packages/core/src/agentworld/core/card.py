"""The world-model card: rendering facts a checkpoint was trained with, saved beside it.

Trainers write ``agentworld.json`` into every checkpoint directory; simulators read it,
so ``sim:CHECKPOINT`` alone says which domain the model simulates, whether its answers
carry the reward footer and how many turns of history it expects
(:mod:`agentworld.core.formats`). A checkpoint without the file (any plain Hugging Face
model) gets the defaults: no footer, whole history, unknown domain.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentworld.core.formats import history_window
from agentworld.core.types import Episode

CARD_FILE = "agentworld.json"


def card_from_episodes(episodes: Sequence[Episode]) -> dict[str, Any]:
    """``{"domain", "domains", "rewards", "history_window"}`` of the training episodes.

    ``domains`` lists every episode domain, most episodes first (ties by name); ``domain``
    is the first of them, the one a simulator defaults to (``None`` for no episodes);
    ``rewards`` is true when any episode carries the reward footer, ``history_window`` the
    largest window any episode sets (``None`` when none sets one).
    """
    counts = Counter(e.domain for e in episodes)
    domains = sorted(counts, key=lambda d: (-counts[d], d))
    windows = [w for e in episodes if (w := history_window(e)) is not None]
    return {
        "domain": domains[0] if domains else None,
        "domains": domains,
        "rewards": any(bool(e.metadata.get("rewards")) for e in episodes),
        "history_window": max(windows) if windows else None,
    }


def write_card(directory: str | Path, card: dict[str, Any]) -> Path:
    """Write ``card`` as ``directory/agentworld.json`` atomically (temporary file, then rename)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".agentworld-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(card, f, indent=1)
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes it 0600; a card is read by whoever loads the model
    target = directory / CARD_FILE
    os.replace(tmp, target)
    return target


def read_card(directory: str | Path) -> dict[str, Any]:
    """The card of a checkpoint directory, or ``{}`` when it has none (or is not local).

    Raises:
        ValueError: the file exists but is not a JSON object (names the file).
    """
    path = Path(directory) / CARD_FILE
    if not path.is_file():
        return {}
    try:
        card = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(card, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(card).__name__}")
    return card
