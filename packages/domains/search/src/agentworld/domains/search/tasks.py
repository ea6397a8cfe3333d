"""Seeded question-answering tasks whose answers the corpus holds.

Kinds (:data:`KINDS`):

* ``lookup``: one fact of one world entity ("In what year was Sushoul Labs founded?").
* ``two_hop``: a fact of an entity named on another entity's page ("In which city was the
  founder of Sushoul Labs born?").
* ``compare``: the same fact of two entities, compared ("Which company was founded
  earlier ...?", "Which city has the larger population ...?").
* ``docs_fact``: the standard-library function or class whose documentation opens with a
  given sentence (answer: its dotted name, ``json.dumps``).

``Task.setup["hops"]`` is the plan a careful searcher follows (``entity``: a name, or
``"$0"`` for the value found by hop 0; ``field``: an infobox row; ``part``: which comma part of
the row's value), ``setup["combine"]`` how the hops give the answer; ``Task.check["answer"]``
is the answer, ``check["aliases"]`` other accepted forms (:func:`is_correct`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from agentworld.core.types import Task
from agentworld.domains.search.engine import load_engine
from agentworld.domains.search.world import World, make_world

KINDS: tuple[str, ...] = ("lookup", "two_hop", "compare", "docs_fact")
_NORM = re.compile(r"[^a-z0-9. ]+")
_LOOKUPS = {
    "company": [("Founded", "In what year was {} founded?"),
                ("Founder", "Who founded {}?"),
                ("Chief executive", "Who is the chief executive of {}?"),
                ("Headquarters", "In which city is {} headquartered?")],
    "person": [("Birthplace", "In which city was {} born?"),
               ("Occupation", "What is the occupation of {}?")],
    "city": [("Country", "In which country is the city of {}?"),
             ("River", "On which river does the city of {} lie?"),
             ("Founded", "In what year was the city of {} founded?")],
}
_TWO_HOPS = [
    ("Founder", 0, "Birthplace", 0, "In which city was the founder of {} born?"),
    ("Chief executive", 0, "Born", 0, "In what year was the chief executive of {} born?"),
    ("Headquarters", 0, "Founded", 0,
     "In what year was the city where {} is headquartered founded?"),
    ("Founder", 0, "Occupation", 0, "What is the occupation of the person who founded {}?"),
]
INSTRUCTION_TAIL = " Use web_search, web_extractor and dict_memory as needed, then give the " \
                   "final answer with the answer tool."


def normalize(text: str) -> str:
    """Lower-cased ``text`` with punctuation (but ``.``) and the articles a/an/the removed,
    spaces collapsed and a final ``.`` dropped."""
    words = _NORM.sub(" ", text.lower()).split()
    return " ".join(w for w in words if w not in ("a", "an", "the")).rstrip(".")


def is_correct(answer: str, check: dict[str, Any]) -> bool:
    """Whether ``answer`` matches ``check["answer"]`` or one of ``check["aliases"]``:
    equal after :func:`normalize`, or containing it as whole words in at most six more words."""
    given = normalize(answer).split()
    for gold in [check["answer"], *check.get("aliases", [])]:
        want = normalize(str(gold)).split()
        if given == want:
            return True
        if want and len(given) <= len(want) + 6 and any(
            given[i:i + len(want)] == want for i in range(len(given) - len(want) + 1)
        ):
            return True
    return False


def _value(world: World, kind: str, name: str, field: str) -> str:
    if kind == "company":
        c = next(c for c in world.companies if c.name == name)
        return {"Founded": str(c.founded), "Founder": c.founder, "Chief executive": c.ceo,
                "Headquarters": c.headquarters}[field]
    if kind == "person":
        p = world.person(name)
        return {"Birthplace": p.birthplace, "Born": str(p.born),
                "Occupation": p.occupation.capitalize()}[field]
    c = world.city(name)
    return {"Country": c.country, "River": c.river, "Founded": str(c.founded),
            "Population": str(c.population)}[field]


def _unique_summaries(world_seed: int) -> list[tuple[str, str]]:
    """``(first sentence, dotted name)`` of docs pages of functions and classes whose first
    sentence has 6-30 words, appears on no other page, and whose page BM25 ranks in the top 3
    for that sentence."""
    engine = load_engine(world_seed)
    docs = [p for p in engine.pages if p.source == "docs" and "#module-" not in p.url]
    firsts = {}
    for page in docs:
        body = page.text.split("\n\n", 1)[1] if "\n\n" in page.text else ""
        first = " ".join(body.split("\n\n", 1)[0].split()).split(". ")[0].rstrip(".")
        if 6 <= len(first.split()) <= 30:
            firsts.setdefault(first, []).append(page)
    out = []
    for sentence, pages in sorted(firsts.items()):
        if len(pages) != 1 or sum(sentence in p.text for p in engine.pages) != 1:
            continue
        if pages[0].url in [h.page.url for h in engine.search(sentence, 3)]:
            out.append((sentence, pages[0].title))
    return out


def sample_kinds(n: int, seed: int, kinds: tuple[str, ...],
                 task: Callable[[random.Random, str, str], Task]) -> list[Task]:
    """``n`` tasks ``task(rng, kind, task_id)`` with ``rng = random.Random(seed)``, the kinds
    taken in turn from a seeded offset (every kind within ``len(kinds)`` draws); ids
    ``search-SEED-I``.

    Raises:
        ValueError: ``n`` is negative.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    offset = rng.randrange(len(kinds))
    return [task(rng, kinds[(offset + i) % len(kinds)], f"search-{seed}-{i}") for i in range(n)]


class SearchTaskSampler:
    """Seeded tasks over the corpus of world ``world_seed``.

    Args:
        world_seed: The fictional world's seed (the environment must use the same).
        kinds: Task kinds to draw, a subset of :data:`KINDS`, cycled in order from a seeded
            offset.

    Raises:
        ValueError: an unknown kind, or none.
    """

    def __init__(self, world_seed: int = 0, kinds: tuple[str, ...] = KINDS) -> None:
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown or not kinds:
            raise ValueError(f"unknown task kinds {unknown or kinds}; valid: {', '.join(KINDS)}")
        self.world_seed, self.kinds = world_seed, tuple(kinds)
        self.world = make_world(world_seed)
        self._docs: list[tuple[str, str]] | None = None

    def sample(self, n: int, *, seed: int) -> list[Task]:
        """``n`` tasks drawn with ``random.Random(seed)`` (same seed, same tasks;
        :func:`sample_kinds`).

        Raises:
            ValueError: ``n`` is negative.
        """
        return sample_kinds(n, seed, self.kinds, self._task)

    def _task(self, rng: random.Random, kind: str, task_id: str) -> Task:
        w = self.world
        if kind == "lookup":
            etype = rng.choice(sorted(_LOOKUPS))
            names = {"company": w.companies, "person": w.people, "city": w.cities}[etype]
            name = rng.choice(names).name
            field, question = rng.choice(_LOOKUPS[etype])
            hops = [{"entity": name, "field": field, "part": 0}]
            answer, combine = _value(w, etype, name, field), "last"
        elif kind == "two_hop":
            company = rng.choice(w.companies)
            f1, p1, f2, p2, question = rng.choice(_TWO_HOPS)
            name = company.name
            hops = [{"entity": name, "field": f1, "part": p1},
                    {"entity": "$0", "field": f2, "part": p2}]
            middle = _value(w, "company", name, f1)
            answer = _value(w, "city" if f1 == "Headquarters" else "person", middle, f2)
            combine = "last"
        elif kind == "compare":
            if rng.random() < 0.5:
                a, b = rng.sample(list(w.companies), 2)
                while a.founded == b.founded:
                    a, b = rng.sample(list(w.companies), 2)
                field, combine = "Founded", "earlier"
                question = f"Which company was founded earlier: {{}} or {b.name}?"
                answer = a.name if a.founded < b.founded else b.name
            else:
                a, b = rng.sample(list(w.cities), 2)
                field, combine = "Population", "larger"
                question = f"Which city has the larger population: {{}} or {b.name}?"
                answer = a.name if a.population > b.population else b.name
            name = a.name
            hops = [{"entity": a.name, "field": field, "part": 0},
                    {"entity": b.name, "field": field, "part": 0}]
        else:
            if self._docs is None:
                self._docs = _unique_summaries(self.world_seed)
            sentence, dotted = rng.choice(self._docs)
            question = ("Which Python standard library function or class is documented with "
                        f'the sentence "{sentence}"? Answer with its dotted name (module.name).')
            return Task(id=f"{task_id}-{kind}", domain="search", kind=kind,
                        instruction=question + INSTRUCTION_TAIL,
                        setup={"world_seed": self.world_seed, "sentence": sentence,
                               "combine": "docs"},
                        check={"answer": dotted, "aliases": []})
        return Task(id=f"{task_id}-{kind}", domain="search", kind=kind,
                    instruction=question.format(name) + INSTRUCTION_TAIL,
                    setup={"world_seed": self.world_seed, "hops": hops, "combine": combine},
                    check={"answer": answer, "aliases": []})
