"""``SearchEnvOptions``: what ``agentworld collect --domain search --set KEY=VALUE`` may give
:class:`~agentworld.domains.search.env.SearchEnv` (:mod:`agentworld.core.options`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from agentworld.core.options import EnvOptions
from pydantic import PlainSerializer, field_validator

#: A path option: given and checked as a path, passed on (and recorded) as its string.
PathOption = Annotated[Path, PlainSerializer(str, return_type=str)]


class SearchEnvOptions(EnvOptions):
    """Options of the search domain's real environment.

    Attributes:
        world_seed: Seed of the corpus's fictional world (default: the domain's, 0); tasks
            of another world are refused at reset.
        corpus: A folder of the user's own Markdown, HTML, reStructuredText and text
            documents (:mod:`agentworld.domains.search.user_corpus`) searched instead of the
            built-in corpus, with tasks synthesised from them
            (:mod:`agentworld.domains.search.user_tasks`). A folder that does not exist, holds
            no document, or gives no question is refused here, before any file is written
            (its pages and index are built and cached here).
    """

    world_seed: int = 0
    corpus: PathOption | None = None

    @field_validator("corpus")
    @classmethod
    def _usable(cls, corpus: Path | None) -> Path | None:
        if corpus is None:
            return None
        from agentworld.domains.search.user_corpus import document_files, load_user_engine
        from agentworld.domains.search.user_tasks import UserTaskSampler

        document_files(corpus)  # raises CorpusError (a ValueError) naming the folder
        engine, digest = load_user_engine(str(corpus.resolve()))  # built and cached once
        try:
            UserTaskSampler(engine.pages, digest)
        except ValueError as e:
            raise ValueError(f"corpus {str(corpus)!r}: {e}") from None
        return corpus.resolve()
