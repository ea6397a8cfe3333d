"""One page of the search corpus, the record its two sources write
(:mod:`agentworld.domains.search.corpus` for the docs, :mod:`agentworld.domains.search.world`
for the fictional world) and the engine indexes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Page:
    """One page of the corpus.

    Attributes:
        url: Its address (unique in the corpus).
        title: The page title shown in search results.
        text: The page body (Markdown for world pages, plain docstring text for docs).
        date: Publication date shown in results (``"N/A"`` for reference pages).
        source: ``"docs"`` or ``"world"``.
    """

    url: str
    title: str
    text: str
    date: str = "N/A"
    source: str = "docs"
