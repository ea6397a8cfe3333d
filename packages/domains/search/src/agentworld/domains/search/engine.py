"""The search engine: Okapi BM25 over the corpus, with ``bm25s``.

Ranking is BM25 (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and
Beyond", Foundations and Trends in IR 3(4), 2009) as implemented by ``bm25s`` (Lù, "BM25S:
Orders of magnitude faster lexical search via eager sparse scoring", arXiv 2407.03618, 2024;
https://github.com/xhluca/bm25s): Lucene's variant, ``k1 = 1.5``, ``b = 0.75``, lower-cased
word tokens of two or more characters, English stop words removed, no stemming. A page is
indexed as its title plus its text. Results with a zero score (no query term on the page) are
not returned; equal scores keep corpus order.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
from bm25s.tokenization import Tokenizer

from agentworld.domains.search.corpus import Page, build_corpus

SNIPPET_CHARS = 200
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w\w+")


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: the ``page`` and its BM25 ``score`` (> 0)."""

    page: Page
    score: float


class Engine:
    """A BM25 index over ``pages``.

    Args:
        pages: The corpus; URLs must be unique.

    Raises:
        ValueError: ``pages`` is empty or two pages share a URL.
    """

    def __init__(self, pages: list[Page]) -> None:
        if not pages:
            raise ValueError("the corpus is empty")
        self.pages = list(pages)
        self.by_url = {p.url: p for p in self.pages}
        if len(self.by_url) != len(self.pages):
            raise ValueError("two corpus pages share a URL")
        self._tokenizer = Tokenizer(stopwords="en")
        ids = self._tokenizer.tokenize([f"{p.title}\n{p.text}" for p in self.pages],
                                       return_as="ids", show_progress=False)
        self._bm25 = bm25s.BM25()
        self._bm25.index(ids, show_progress=False)
        self._lock = threading.Lock()

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """The ``k`` best pages for ``query``, best first (fewer when fewer pages share a term
        with it; none for a query of stop words or unknown words).

        Raises:
            ValueError: ``k`` is not between 1 and the corpus size.
        """
        if not 1 <= k <= len(self.pages):
            raise ValueError(f"k must be between 1 and {len(self.pages)}, got {k}")
        with self._lock:
            tokens = self._tokenizer.tokenize([query], update_vocab=False, return_as="ids",
                                              show_progress=False)
            if not tokens[0]:
                return []
            scores = self._bm25.get_scores(tokens[0])
        order = np.argsort(-scores, kind="stable")[:k]
        return [Hit(self.pages[i], float(scores[i])) for i in order if scores[i] > 0]

    def page(self, url: str) -> Page | None:
        """The page at ``url`` (trailing ``/`` and surrounding spaces ignored), else ``None``."""
        url = url.strip()
        return self.by_url.get(url) or self.by_url.get(url.rstrip("/"))


def snippet(page: Page, query: str, chars: int = SNIPPET_CHARS) -> str:
    """The prose sentence of ``page`` (headings and table rows skipped) sharing the most words
    with ``query`` (the first on a tie), cut to ``chars`` characters; ``" ..."`` is appended
    unless it is the page's last sentence and uncut."""
    terms = {w.lower() for w in _WORD.findall(query)}
    prose = "\n".join(line for line in page.text.splitlines()
                      if not line.lstrip().startswith(("|", "#")) and line.strip() != page.title)
    sentences = [" ".join(s.replace("*", "").split()) for s in _SENTENCE.split(prose)]
    sentences = [s for s in sentences if s] or [page.title]
    best = max(sentences, key=lambda s: len(terms & {w.lower() for w in _WORD.findall(s)}))
    if len(best) > chars or best != sentences[-1]:
        return best[:chars].rstrip() + " ..."
    return best


@functools.cache
def load_engine(world_seed: int = 0, directory: Path | None = None) -> Engine:
    """The engine over :func:`~agentworld.domains.search.corpus.build_corpus` (built once per
    process and arguments; the corpus itself is cached on disk).

    Raises:
        ValueError: ``world_seed`` is negative.
        OSError: the corpus cache cannot be written.
    """
    return Engine(build_corpus(world_seed, directory))
