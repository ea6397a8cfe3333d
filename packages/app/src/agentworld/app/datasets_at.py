"""What a pipeline run reads back by URL (a local path or any fsspec URL): whether a file is
there, and the episodes of a dataset in any format. Shared by the pipeline's stages
(:mod:`agentworld.app.pipeline`) and its evaluation sets (:mod:`agentworld.app.eval_sets`)."""

from __future__ import annotations

from agentworld.core.dataformats import read_any_episodes
from agentworld.core.types import Episode


def url_exists(url: str) -> bool:
    """Whether ``url`` (a path or fsspec URL) names an existing file or directory."""
    import fsspec

    fs, path = fsspec.core.url_to_fs(url)
    return bool(fs.exists(path))


def episodes_at(url: str) -> list[Episode]:
    """Episodes of ``url`` in any dataset format (:func:`agentworld.core.dataformats.read_any_episodes`).

    Raises:
        What :func:`~agentworld.core.dataformats.read_any_episodes` raises (a missing file, an
        unknown format).
    """
    return read_any_episodes(url)[0]
