"""Experiment trackers (``report_to``) for every training stage, through accelerate's tracking API.

``report_to = ["tensorboard"]`` sends each ``train_log.jsonl`` record to TensorBoard as
well (under ``OUTPUT_DIR/runs/``); any accelerate tracker name works (``wandb``, ``trackio``,
``mlflow``, ``aim``, ...) once its package is installed. The console and
``train_log.jsonl`` always get the records.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from accelerate import Accelerator

INSTALL_HINTS = {"tensorboard": "pip install 'agentworld-trainers[tensorboard]'"}


def check_trackers(names: Sequence[str]) -> list[str]:
    """Validate ``report_to`` names before any training starts; returns them unchanged.

    Raises:
        ValueError: a name accelerate does not know (the message lists the valid ones), or a
            tracker whose package is not installed (the message says what to install).
    """
    if not names:
        return list(names)
    from accelerate.tracking import get_available_trackers
    from accelerate.utils import LoggerType

    valid = sorted(t.value for t in LoggerType if t.value != "all")
    unknown = sorted(set(names) - set(valid))
    if unknown:
        raise ValueError(f"unknown report_to {unknown}; valid tracker names: {', '.join(valid)}")
    available = {str(t.value) for t in get_available_trackers()}
    missing = [n for n in names if n not in available]
    if missing:
        hints = "; ".join(INSTALL_HINTS.get(n, f"install the {n!r} package") for n in missing)
        raise ValueError(f"report_to {missing}: tracker package not installed ({hints})")
    return list(names)


def flat_config(config: Mapping[str, Any]) -> dict[str, str | int | float | bool]:
    """``config`` with only scalar values (what every tracker's hyper-parameter store takes).

    ``None`` entries are dropped; lists and mappings become their JSON text.
    """
    out: dict[str, str | int | float | bool] = {}
    for key, value in config.items():
        if value is None:
            continue
        out[key] = value if isinstance(value, (str, int, float, bool)) else json.dumps(value)
    return out


def start_trackers(
    acc: Accelerator, names: Sequence[str], out: Path, project: str, config: Mapping[str, Any]
) -> None:
    """Attach ``names`` to ``acc`` (logging under ``out/runs``) and record ``config``; no-op when empty."""
    if not names:
        return
    from accelerate.tracking import filter_trackers

    acc.project_configuration.logging_dir = str(out / "runs")
    acc.log_with = filter_trackers(list(names), str(out / "runs"))
    acc.init_trackers(project, config=flat_config(config))
