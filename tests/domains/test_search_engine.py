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
    with pytest.raises(ValueError, match="k must be at least 1"):
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


def test_index_is_cached_privately_and_answers_as_a_fresh_one(tmp_path, monkeypatch):
    import stat

    from agentworld.domains.search.corpus import cache_dir
    from agentworld.domains.search.engine import index_path

    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "cache"))
    assert cache_dir() == tmp_path / "cache" / "search"
    pages = build_corpus(0)
    built = Engine(pages, index_path(0, cache_dir()))
    assert not built.loaded and stat.S_IMODE(cache_dir().stat().st_mode) == 0o700
    assert sorted(p.name for p in cache_dir().iterdir()) == sorted([
        corpus_path(0).name, index_path(0, cache_dir()).name])  # no temporary left behind
    loaded = Engine(pages, index_path(0, cache_dir()))
    fresh = Engine(pages)
    assert loaded.loaded
    for query in ("json dumps indent", "founded river city", "heapq merge", "qqqzzz"):
        assert [(h.page.url, h.score) for h in loaded.search(query, 10)] == \
            [(h.page.url, h.score) for h in fresh.search(query, 10)]
    with pytest.raises(ValueError, match="cached index .* has 829 pages, the corpus 10"):
        Engine(pages[:10], index_path(0, cache_dir()))


def test_cache_refuses_a_symbolic_link(tmp_path, monkeypatch):
    from agentworld.core.cache import cache_dir as core_cache_dir

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "cache").symlink_to(tmp_path / "elsewhere")
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "cache"))
    with pytest.raises(OSError, match="cache directory .*cache is a symbolic link"):
        core_cache_dir()
