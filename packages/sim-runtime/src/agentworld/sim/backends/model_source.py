"""Where a model comes from: a local checkpoint directory or, only when allowed, the Hub.

One rule for training, ``eval``, ``simulate``, ``serve`` and ``serve-openai``: a model
argument that is not a local directory is a Hugging Face Hub id only when it has the form
``org/name`` (:data:`HUB_ID`; it does not exist, nor does its parent directory), and only
while downloads are allowed (``allow_hub``, on by default: ``--no-allow-hub`` on the
commands, ``--set allow_hub=false`` for training, turn it off). Loading from the Hub
without a network gives a one-line :class:`ModelSourceError`, not transformers' traceback.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
HUB_HINT = "drop --no-allow-hub (training: allow_hub=true)"


class ModelSourceError(ValueError):
    """A model argument that names no local checkpoint and no allowed, reachable hub id."""


def looks_like_hub_id(spec: str) -> bool:
    """True when ``spec`` has the form of a hub id, ``org/name`` (:data:`HUB_ID`), and cannot
    be a local path: it does not exist, nor does its parent directory."""
    if not HUB_ID.match(spec) or os.path.exists(spec):
        return False
    return not os.path.isdir(os.path.dirname(spec))


def is_hub_source(spec: str, *, allow_hub: bool) -> bool:
    """False for a local directory, True for a hub id that may be downloaded.

    Raises:
        ModelSourceError: ``spec`` is a file, or a hub id without ``allow_hub`` (the message
            says what to pass).
        FileNotFoundError: ``spec`` is neither a directory nor of a hub id's form.
    """
    if os.path.isdir(spec):
        return False
    if os.path.exists(spec):
        raise ModelSourceError(f"model {spec!r} is a file, not a checkpoint directory")
    if not looks_like_hub_id(spec):
        raise FileNotFoundError(
            f"checkpoint directory {spec!r} does not exist (a hub id has the form 'org/name')"
        )
    if not allow_hub:
        raise ModelSourceError(
            f"model {spec!r} is not a local directory, and Hugging Face Hub downloads are off; "
            f"to download it, {HUB_HINT}"
        )
    return True


@contextmanager
def hub_errors(spec: str) -> Iterator[None]:
    """Turn a failed Hub download of ``spec`` (offline, unknown id, no access) into a
    one-line :class:`ModelSourceError` naming the id."""
    try:
        yield
    except OSError as e:  # transformers raises OSError; huggingface_hub's errors derive from it
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ModelSourceError(
            f"cannot load {spec!r} from the Hugging Face Hub: {reason} (offline? check the "
            "network or HF_HUB_OFFLINE and the cache, or pass a local checkpoint directory)"
        ) from None
