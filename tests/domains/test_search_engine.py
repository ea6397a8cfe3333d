"""The real corpus and BM25 engine of the search domain (bm25s over stdlib docs + a world)."""

from __future__ import annotations

import time

import pytest
from agentworld.domains.search.corpus import build_corpus, corpus_path
from agentworld.domains.search.engine import Engine, load_engine, snippet
from agentworld.domains.search.world import make_world, world_pages


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> Engine:
    return load_engine(0, tmp_path_factory.mktemp("cache"))


def test_corpus_builds_fast_is_cached_and_deterministic(tmp_path):
    start = time.perf_counter()
    pages = build_corpus(0, tmp_path)
    built = time.perf_counter() - start
    assert corpus_path(0, tmp_path).is_file()
    start = time.perf_counter()
    again = build_corpus(0, tmp_path)
    cached = time.perf_counter() - start
    docs = [p for p in pages if p.source == "docs"]
    world = [p for p in pages if p.source == "world"]
    print(f"corpus: {len(pages)} pages ({len(docs)} docs, {len(world)} world), "
          f"{sum(len(p.text) for p in pages)} chars, built in {built:.2f} s, read back in "
          f"{cached:.3f} s")
    assert again == pages and built < 10
    assert len(docs) > 600 and len(world) == 16 + 48 + 32 + 32
    assert len({p.url for p in pages}) == len(pages)
    assert build_corpus(0, tmp_path / "fresh") == pages  # deterministic from scratch


def test_known_queries_rank_the_right_page_first(engine):
    hits = engine.search("Serialize obj to a JSON formatted str", 5)
    assert hits[0].page.title == "json.dumps"
    assert hits[0].page.url == "https://docs.python.org/3/library/json.html#json.dumps"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    company = make_world(0).companies[0]
    top = engine.search(f"{company.name} founded", 3)[0].page
    assert top.title == f"{company.name} - Worldpedia"
    assert f"| Founded | {company.founded} |" in top.text
    assert "Serialize" in snippet(hits[0].page, "serialize json")


def test_queries_without_known_words_find_nothing(engine):
    assert engine.search("the of and", 10) == []
    assert engine.search("qqqzzzxx", 10) == []
    with pytest.raises(ValueError, match="k must be between"):
        engine.search("json", 0)


def test_world_is_seeded_and_consistent_across_pages():
    world = make_world(0)
    assert world == make_world(0) and world != make_world(1)
    pages = {p.url: p.text for p in world_pages(world)}
    for company in world.companies:
        founder = world.person(company.founder)
        assert company.founded > founder.born
        founder_page = pages[f"https://en.worldpedia.org/wiki/{founder.name.replace(' ', '_')}"]
        assert f"founded {company.name}" in founder_page
        assert f"| Birthplace | {founder.birthplace} |" in founder_page
    with pytest.raises(ValueError, match="companies <= people"):
        make_world(0, people=3, companies=4)
