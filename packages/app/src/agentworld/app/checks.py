"""Checks of the paths a command is given, run before anything heavy is imported.

A command that trains or loads a model imports torch and transformers (15-30 s of CPU on a
small machine). A missing data file or model directory is answered before that, in the
time the CLI itself takes to start (under a second of CPU), with a one-line error naming the
option and what would be valid. The deeper checks (a preset name, a checkpoint's files, a
dataset's rows) stay where they are; these only refuse what can never work.

The model rule mirrors :mod:`agentworld.sim.backends.model_source` (the app may import only
the kernel): a model that is not an existing directory is a preset or base *name* (no ``/``)
or a Hugging Face Hub id ``org/name`` whose first part is no local directory.
"""

from __future__ import annotations

import os
import re

import typer

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def is_url(location: str) -> bool:
    """True for an fsspec URL with a protocol (``s3://``, ``memory://``, ``file://``...)."""
    return "://" in location


def check_input_file(location: str, hint: str) -> None:
    """Refuse a local input file that does not exist or is a directory.

    Raises:
        typer.BadParameter: ``location`` (a local path) is missing or not a file.
    """
    if is_url(location):
        return
    path = os.path.expanduser(location)
    if os.path.isdir(path):
        raise typer.BadParameter(f"{location} is a directory; give a data file "
                                 "(.jsonl, .jsonl.gz, .parquet)", param_hint=hint)  # fmt: skip
    if not os.path.exists(path):
        raise typer.BadParameter(f"{location}: no such file", param_hint=hint)


def check_model(spec: str, hint: str, *, allow_hub: bool = True) -> None:
    """Refuse a model that is neither a checkpoint directory, nor a name, nor an allowed hub id.

    Args:
        spec: A checkpoint directory, a preset or pretrained base name, or a hub id ``org/name``.
        hint: The option it came from (``--model``).
        allow_hub: Whether a hub id may be downloaded.

    Raises:
        typer.BadParameter: ``spec`` is a file, a directory without ``config.json``, a path
            that does not exist, or a hub id while downloads are off.
    """
    path = os.path.expanduser(spec)
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, "config.json")):
            raise typer.BadParameter(f"{spec} is a directory without config.json: not a model "
                                     "checkpoint", param_hint=hint)  # fmt: skip
        return
    if os.path.exists(path):
        raise typer.BadParameter(f"{spec} is a file; give a checkpoint directory or a preset "
                                 "name", param_hint=hint)  # fmt: skip
    if "/" not in spec and not spec.startswith((".", "~")):
        return  # a preset or base name: the trainer knows which exist and lists them
    parent = os.path.dirname(path.rstrip("/"))
    if _HUB_ID.match(spec) and not os.path.isdir(parent):
        if allow_hub:
            return
        raise typer.BadParameter(f"{spec} is not a local directory and Hugging Face Hub "
                                 "downloads are off (allow_hub)", param_hint=hint)  # fmt: skip
    raise typer.BadParameter(f"checkpoint directory {spec} does not exist (a hub id has the "
                             "form 'org/name')", param_hint=hint)  # fmt: skip


def check_output_dir(location: str, hint: str) -> None:
    """Refuse an output directory that is an existing file.

    Raises:
        typer.BadParameter: ``location`` (a local path) is a file.
    """
    if not is_url(location) and os.path.isfile(os.path.expanduser(location)):
        raise typer.BadParameter(f"{location} is a file; give a directory to write into",
                                 param_hint=hint)  # fmt: skip
