"""A seeded fictional world: people, companies and cities whose facts agree across pages.

:func:`make_world` draws the entities and their relations (a person is born in a city; a
company is founded in a year by a person, headquartered in a city, led by another person);
:func:`world_pages` writes them as encyclopedia pages (``https://en.worldpedia.org/wiki/...``,
an infobox table then prose) and dated news pages (``https://news.example-times.com/...``).
Names are made of syllables, so they are unique words that BM25 retrieves precisely. The same
seed gives the same world and the same pages.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from agentworld.domains.search.page import Page

WIKI = "https://en.worldpedia.org/wiki"
NEWS = "https://news.example-times.com"
_ONSETS = ("b", "br", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "r",
           "s", "st", "t", "tr", "v", "z", "th", "sh", "c", "j")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ei", "ou", "ia")
_CODAS = ("", "n", "r", "l", "s", "th", "m", "x", "nd", "rk", "sk", "v")
COUNTRIES = ("Eldoria", "Varnland", "Quessa", "Montrevia", "Ostheim", "Caldria")
INDUSTRIES = ("robotics", "shipbuilding", "pharmaceuticals", "software", "textiles",
              "aerospace", "banking", "agriculture", "energy", "publishing")
SUFFIXES = ("Systems", "Works", "Labs", "Holdings", "Foundry", "Analytics", "Industries")
OCCUPATIONS = ("engineer", "chemist", "economist", "architect", "physician", "inventor",
               "entrepreneur", "mathematician")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True, slots=True)
class City:
    name: str
    country: str
    founded: int
    population: int
    river: str


@dataclass(frozen=True, slots=True)
class Person:
    name: str
    born: int
    birthplace: str
    occupation: str


@dataclass(frozen=True, slots=True)
class Company:
    name: str
    industry: str
    founded: int
    founder: str
    headquarters: str
    ceo: str
    employees: int


@dataclass(frozen=True, slots=True)
class World:
    """The entities of one seeded world (``seed``), each list sorted by creation order."""

    seed: int
    cities: tuple[City, ...]
    people: tuple[Person, ...]
    companies: tuple[Company, ...]

    def city(self, name: str) -> City:
        """The city called ``name``. Raises ``KeyError`` for an unknown name."""
        return {c.name: c for c in self.cities}[name]

    def person(self, name: str) -> Person:
        """The person called ``name``. Raises ``KeyError`` for an unknown name."""
        return {p.name: p for p in self.people}[name]


def _word(rng: random.Random, syllables: int, used: set[str]) -> str:
    while True:
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
        word = (word + rng.choice(_CODAS)).capitalize()
        if word not in used and len(word) >= 4:
            used.add(word)
            return word


def make_world(seed: int, *, cities: int = 16, people: int = 48, companies: int = 32) -> World:
    """Draw a world with ``cities`` cities, ``people`` people and ``companies`` companies
    (``companies <= people``) from ``random.Random(seed)``.

    Raises:
        ValueError: a count is below 2, or ``companies > people``.
    """
    if min(cities, people, companies) < 2 or companies > people:
        raise ValueError(f"need counts >= 2 and companies <= people, got {cities}, {people}, "
                         f"{companies}")
    rng, used = random.Random(seed), set()
    city_list = tuple(
        City(_word(rng, 2, used), rng.choice(COUNTRIES), rng.randrange(1100, 1850),
             rng.randrange(20, 900) * 1000, _word(rng, 2, used))
        for _ in range(cities)
    )
    person_list = tuple(
        Person(f"{_word(rng, 2, used)} {_word(rng, 2, used)}", rng.randrange(1900, 1985),
               rng.choice(city_list).name, rng.choice(OCCUPATIONS))
        for _ in range(people)
    )
    founders = rng.sample(person_list, companies)
    company_list = []
    for founder in founders:
        ceo = rng.choice([p for p in person_list if p.name != founder.name])
        company_list.append(Company(
            f"{_word(rng, 2, used)} {rng.choice(SUFFIXES)}", rng.choice(INDUSTRIES),
            founder.born + rng.randrange(22, 40), founder.name, rng.choice(city_list).name,
            ceo.name, rng.randrange(3, 400) * 50))
    return World(seed, city_list, person_list, tuple(company_list))


def wiki_url(name: str) -> str:
    """The encyclopedia URL of an entity: ``https://en.worldpedia.org/wiki/First_Last``."""
    return f"{WIKI}/{name.replace(' ', '_')}"


def wiki_title(name: str) -> str:
    """The encyclopedia page title of an entity: ``"Name - Worldpedia"``."""
    return f"{name} - Worldpedia"


def _a(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def _infobox(name: str, rows: list[tuple[str, str]]) -> str:
    lines = [f"| {name} | |", "| --- | --- |", *(f"| {k} | {v} |" for k, v in rows)]
    return "\n".join(lines)


def _page(name: str, rows: list[tuple[str, str]], lead: str, sections: list[tuple[str, str]]) -> Page:
    body = [f"# {name}", "From Worldpedia, the free encyclopedia", _infobox(name, rows), lead]
    body += [f"## {title}\n\n{text}" for title, text in sections]
    return Page(wiki_url(name), wiki_title(name), "\n\n".join(body), "N/A", "world")


def world_pages(world: World) -> list[Page]:
    """The pages of ``world``: one encyclopedia page per city, person and company, and one
    dated news page per company, in that order."""
    rng = random.Random(f"pages-{world.seed}")
    founded_by: dict[str, list[Company]] = {}
    for c in world.companies:
        founded_by.setdefault(c.founder, []).append(c)
    pages = []
    for c in world.cities:
        natives = sorted(p.name for p in world.people if p.birthplace == c.name)
        pages.append(_page(c.name, [
            ("Country", c.country), ("Founded", str(c.founded)),
            ("Population", f"{c.population:,}"), ("River", c.river)],
            f"**{c.name}** is a city in {c.country} on the {c.river} river, founded in "
            f"{c.founded}. It has a population of {c.population:,}.",
            [("Notable people", ", ".join(natives) or "None recorded.")]))
    for p in world.people:
        firms = founded_by.get(p.name, [])
        career = " ".join(f"In {f.founded} {p.name.split()[0]} founded {f.name}, a "
                          f"{f.industry} company." for f in firms)
        pages.append(_page(p.name, [
            ("Born", f"{p.born}, {p.birthplace}, {world.city(p.birthplace).country}"),
            ("Birthplace", p.birthplace), ("Occupation", p.occupation.capitalize())],
            f"**{p.name}** (born {p.born} in {p.birthplace}) is {_a(p.occupation)} from "
            f"{world.city(p.birthplace).country}.",
            [("Career", career or f"{p.name.split()[0]} has worked as {_a(p.occupation)}.")]))
    for c in world.companies:
        hq = world.city(c.headquarters)
        pages.append(_page(c.name, [
            ("Industry", c.industry.capitalize()), ("Founded", str(c.founded)),
            ("Founder", c.founder), ("Headquarters", f"{c.headquarters}, {hq.country}"),
            ("Chief executive", c.ceo), ("Employees", f"{c.employees:,}")],
            f"**{c.name}** is a {c.industry} company headquartered in {c.headquarters}, "
            f"{hq.country}. It was founded in {c.founded} by {c.founder}.",
            [("History", f"{c.founder} founded the company in {c.founded}. Its chief "
              f"executive is {c.ceo}. It employs {c.employees:,} people.")]))
    for c in world.companies:
        year = rng.randrange(max(c.founded + 1, 2000), 2026)
        date = f"{rng.choice(MONTHS)} {rng.randrange(1, 29)}, {year}"
        slug = c.name.lower().replace(" ", "-")
        text = (f"# {c.name} marks {year - c.founded} years\n\n{date}\n\n{c.name}, the "
                f"{c.industry} firm based in {c.headquarters}, celebrated {year - c.founded} "
                f"years since its founding. Chief executive {c.ceo} spoke to staff.")
        pages.append(Page(f"{NEWS}/{year}/{slug}-anniversary",
                          f"{c.name} marks {year - c.founded} years - Example Times", text,
                          date, "world"))
    return pages
