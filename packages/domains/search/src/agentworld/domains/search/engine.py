"""The search engine: Okapi BM25 over the corpus, with ``bm25s``.

Ranking is BM25 (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and
Beyond", Foundations and Trends in IR 3(4), 2009) as implemented by ``bm25s`` (Lù, "BM25S:
Orders of magnitude faster lexical search via eager sparse scoring", arXiv 2407.03618, 2024;
https://github.com/xhluca/bm25s): Lucene's variant, ``k1 = 1.5``, ``b = 0.75``, lower-cased
word tokens of two or more characters, English stop words removed, no stemming. A page is
indexed as its title plus its text. Results with a zero score (no query term on the page) are
not returned; equal scores keep corpus order.

The index (``bm25s``'s sparse score matrix and the tokenizer's vocabulary) is cached beside the
corpus in ``$AGENTWORLD_CACHE/search`` (:func:`index_path`), written whole through
:func:`agentworld.core.cache.atomic_directory`, and loaded instead of rebuilt by the next
process.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
from agentworld.core.cache import atomic_directory
from bm25s.tokenization import Tokenizer

from agentworld.domains.search.corpus import Page, build_corpus, corpus_path

SNIPPET_CHARS = 200
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w\w+")
_UNDERLINE = re.compile(r"([=\-~^*+`'\"])\1{2,}")  # a reStructuredText title's underline


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: the ``page`` and its BM25 ``score`` (> 0)."""

    page: Page
    score: float


class Engine:
    """A BM25 index over ``pages``.

    Args:
        pages: The corpus; URLs must be unique.
        index_dir: Where the index of exactly these ``pages`` is cached: loaded from there
            when present, else built and saved there (``None``: built, not cached). The
            ``bm25s`` version belongs in its name (:func:`index_path`).

    Raises:
        ValueError: ``pages`` is empty, two pages share a URL, or a cached index does not
            cover ``pages``.
        OSError: the index cannot be saved.
    """

    def __init__(self, pages: list[Page], index_dir: Path | None = None) -> None:
        if not pages:
            raise ValueError("the corpus is empty")
        self.pages = list(pages)
        self.by_url = {p.url: p for p in self.pages}
        if len(self.by_url) != len(self.pages):
            raise ValueError("two corpus pages share a URL")
        self._tokenizer = Tokenizer(stopwords="en")
        self.loaded = index_dir is not None and (index_dir / "params.index.json").is_file()
        if self.loaded:
            self._bm25 = bm25s.BM25.load(str(index_dir), show_progress=False)
            self._tokenizer.load_vocab(str(index_dir))
            if self._bm25.scores["num_docs"] != len(self.pages):
                raise ValueError(f"the cached index {index_dir} has "
                                 f"{self._bm25.scores['num_docs']} pages, the corpus "
                                 f"{len(self.pages)}; remove the directory to rebuild it")
        else:
            tokens = self._tokenizer.tokenize([f"{p.title}\n{p.text}" for p in self.pages],
                                              return_as="tuple", show_progress=False)
            self._bm25 = bm25s.BM25()
            self._bm25.index(tokens, show_progress=False)
            if index_dir is not None:
                with atomic_directory(index_dir) as work:
                    self._bm25.save(str(work), show_progress=False)
                    self._tokenizer.save_vocab(str(work))
        self._lock = threading.Lock()

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """The ``k`` best pages for ``query``, best first (fewer when fewer pages share a term
        with it, or the corpus has fewer than ``k``; none for a query of stop words or unknown
        words).

        Raises:
            ValueError: ``k`` is below 1.
        """
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        k = min(k, len(self.pages))
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
                      if not line.lstrip().startswith(("|", "#")) and line.strip() != page.title
                      and not _UNDERLINE.fullmatch(line.strip()))
    sentences = [" ".join(s.replace("*", "").split()) for s in _SENTENCE.split(prose)]
    sentences = [s for s in sentences if s] or [page.title]
    best = max(sentences, key=lambda s: len(terms & {w.lower() for w in _WORD.findall(s)}))
    if len(best) > chars or best != sentences[-1]:
        return best[:chars].rstrip() + " ..."
    return best


def index_path(world_seed: int, directory: Path | None = None) -> Path:
    """The cached index directory of the corpus of ``world_seed``: its corpus file's name
    (:func:`~agentworld.domains.search.corpus.corpus_path`) with the ``bm25s`` version."""
    corpus = corpus_path(world_seed, directory)
    return corpus.with_name(f"{corpus.stem}-bm25s{bm25s.__version__}.index")


@functools.cache
def load_engine(world_seed: int = 0, directory: Path | None = None) -> Engine:
    """The engine over :func:`~agentworld.domains.search.corpus.build_corpus`, once per
    process and arguments; the corpus and its index are cached on disk (:func:`index_path`).

    Raises:
        ValueError: ``world_seed`` is negative.
        OSError: the cache cannot be written.
    """
    return Engine(build_corpus(world_seed, directory), index_path(world_seed, directory))
