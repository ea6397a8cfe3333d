"""A JSON document on disk written atomically (temporary file + ``os.replace``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def load(path: Path, default: Any) -> Any:
    """The JSON value in ``path``, or ``default`` when the file does not exist."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return default


def save(path: Path, value: Any) -> None:
    """Write ``value`` as JSON to ``path`` atomically (readers see the old or the new file)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(value, indent=1, sort_keys=True))
    os.replace(tmp, path)
