"""Tasks synthesised from a user's own documents (``--set corpus=DIR``).

Facts are read from the corpus pages (:mod:`agentworld.domains.search.user_corpus`):

* a **number fact**: a prose sentence (outside code fences: no ``ffi_prep_cif(&cif, ___)``;
  6-40 words, in the first :data:`FACT_WINDOW`
  characters of its document, so the default ``web_extractor`` window shows it) holding
  exactly one number (``42``, ``1,024``, ``3.5``; not ``127.0.0.1`` nor a range ``2-4``),
  found nowhere else in the corpus; the question shows it with the number
  blanked (``___``);
* a **section**: a heading (Markdown ``#`` or an underlined reStructuredText title, in the
  first :data:`FACT_WINDOW` characters, outside code fences) that only one document has, and
  whose text at most :data:`SECTION_SPREAD` documents hold;
* a **link**: a Markdown link ``[text](target)`` from one document to another of the corpus
  (the target resolved against the linking document's folder, ``#anchor`` dropped).

Kinds (:data:`USER_KINDS`), cycled from a seeded offset; a kind the corpus gives no material
for is left out:

* ``lookup``: the number that fills a blank (answer ``"4200"``), or the document id of the
  document with a section (answer ``"guide/install.md"``);
* ``two_hop``: the number in a sentence of the document that another document links to
  under a link text (the answer is on the second document only);
* ``compare``: which of two documents' number facts is larger (answer: that document's
  title; its id is accepted too).

``Task.setup["hops"]`` is the plan (each hop ``{"doc", "title", "sentence"}`` or
``{"doc", "title", "section"}``, a two-hop's first hop with ``"link"``), ``setup["combine"]``
how hops give the answer (``number``, ``path``, ``larger``), ``setup["corpus"]`` the content
hash the environment checks.
"""

from __future__ import annotations

import posixpath
import random
import re
from dataclasses import dataclass

from agentworld.core.types import Task
from agentworld.domains.search.corpus import Page
from agentworld.domains.search.tasks import INSTRUCTION_TAIL, sample_kinds

USER_KINDS: tuple[str, ...] = ("lookup", "two_hop", "compare")
FACT_WINDOW = 4500
SECTION_SPREAD = 5
"""The most pages whose text may hold a section heading asked for: the expert checks the
first five results of a search for it."""
BLANK = "___"
NUMBER = re.compile(r"(?<![\w.,\-])\d+(?:[.,]\d+)*(?![\w\-])")
PLAIN = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LINK = re.compile(r"\[([^\]\n]{2,80})\]\(([^)\s#]+)(?:#[^)\s]*)?\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$|^(\S.{2,80}?)\s*\n[=\-~^]{3,}\s*$", re.MULTILINE)
_SKIP = ("#", "|", "```", "..", "    ", "\t", "<", "-", "*", "=", ">")


@dataclass(frozen=True, slots=True)
class Fact:
    """A sentence of document ``doc`` (titled ``title``) with its one number blanked."""

    doc: str
    title: str
    sentence: str
    number: str


def value(number: str) -> float:
    """A number fact's value (thousands commas dropped; ``"1,024"`` -> 1024.0)."""
    return float(number.replace(",", "")) if number.count(".") <= 1 else 0.0


def number_facts(pages: list[Page]) -> list[Fact]:
    """Each page's number facts (see the module), in page and text order."""
    flat = [" ".join(p.text.split()) for p in pages]
    out = []
    for page in pages:
        offset = 0
        prose = _FENCE.sub(lambda f: " " * len(f.group()), page.text)  # no facts in code
        for block in prose.split("\n\n"):
            start, offset = offset, offset + len(block) + 2
            if start > FACT_WINDOW or block.lstrip().startswith(_SKIP):
                continue
            for sentence in _SENTENCE.split(" ".join(block.split())):
                numbers = NUMBER.findall(sentence)
                if len(numbers) != 1 or not PLAIN.fullmatch(numbers[0]) or BLANK in sentence \
                        or not 6 <= len(sentence.split()) <= 40:
                    continue
                if sum(text.count(sentence) for text in flat) != 1:
                    continue
                out.append(Fact(page.url, page.title,
                                NUMBER.sub(BLANK, sentence, count=1), numbers[0]))
    return out


def sections(pages: list[Page]) -> list[tuple[Page, str]]:
    """``(page, heading)`` for headings in the first :data:`FACT_WINDOW` characters of a page
    (outside code fences) that one page alone has (its title excluded) and whose words at
    most :data:`SECTION_SPREAD` pages' text holds (a manual's name, ``libxslt``, heads one
    page but is on every page: a search for it cannot tell which)."""
    found = [(p, " ".join((m.group(1) or m.group(2)).split()).strip("*_` "))
             for p in pages for m in _HEADING.finditer(
                 _FENCE.sub(lambda f: " " * len(f.group()), p.text)[:FACT_WINDOW])]
    counts: dict[str, int] = {}
    for _, h in found:
        counts[h] = counts.get(h, 0) + 1
    lowered = [" ".join(p.text.split()).lower() for p in pages]
    return [(p, h) for p, h in found if counts[h] == 1 and h != p.title and len(h) >= 3
            and sum(h.lower() in text for text in lowered) <= SECTION_SPREAD]


def resolve(doc: str, target: str) -> str:
    """The document id a link ``target`` in document ``doc`` points at."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(doc), target))


def links(pages: list[Page]) -> list[tuple[Page, str, str]]:
    """``(page, link text, target id)`` of Markdown links between two documents of ``pages``."""
    ids = {p.url for p in pages}
    out = []
    for page in pages:
        for text, target in _LINK.findall(page.text):
            doc = resolve(page.url, target)
            if doc in ids and doc != page.url and "://" not in target:
                out.append((page, " ".join(text.split()), doc))
    return out


class UserTaskSampler:
    """Seeded tasks over a user's corpus.

    Args:
        pages: The corpus pages.
        corpus: The corpus content hash (``setup["corpus"]``).

    Raises:
        ValueError: the corpus gives no material for any kind (no number fact, no
            section and no link).
    """

    def __init__(self, pages: list[Page], corpus: str) -> None:
        self.corpus = corpus
        self.facts = number_facts(pages)
        self.sections = sections(pages)
        by_doc: dict[str, list[Fact]] = {}
        for fact in self.facts:
            by_doc.setdefault(fact.doc, []).append(fact)
        self.by_doc = by_doc
        self.links = [(p, text, doc) for p, text, doc in links(pages) if doc in by_doc]
        self.pairs = len({f.doc for f in self.facts}) >= 2
        self.kinds = tuple(k for k, ok in zip(USER_KINDS, (
            bool(self.facts or self.sections), bool(self.links), self.pairs)) if ok)
        if not self.kinds:
            raise ValueError("the corpus gives no question: no sentence with one number, no "
                             "section heading and no link between its documents")

    def sample(self, n: int, *, seed: int) -> list[Task]:
        """``n`` tasks drawn with ``random.Random(seed)`` (same seed, same tasks;
        :func:`sample_kinds`).

        Raises:
            ValueError: ``n`` is negative.
        """
        return sample_kinds(n, seed, self.kinds, self._task)

    def _task(self, rng: random.Random, kind: str, task_id: str) -> Task:
        if kind == "lookup" and self.facts and (not self.sections or rng.random() < 0.6):
            fact = rng.choice(self.facts)
            hops = [_hop(fact)]
            question = (f'In the document "{fact.title}", what number fills the blank: '
                        f'"{fact.sentence}"?')
            answer, aliases, combine = fact.number, [], "number"
        elif kind == "lookup":
            page, heading = rng.choice(self.sections)
            hops = [{"doc": page.url, "title": page.title, "section": heading}]
            question = (f'Which document has a section titled "{heading}"? Answer with its '
                        "path.")
            answer, aliases, combine = page.url, [], "path"
        elif kind == "two_hop":
            page, text, doc = rng.choice(self.links)
            fact = rng.choice(self.by_doc[doc])
            hops = [{"doc": page.url, "title": page.title, "link": text}, _hop(fact)]
            question = (f'The document "{page.title}" links to another document as "{text}". '
                        f'In that document, what number fills the blank: "{fact.sentence}"?')
            answer, aliases, combine = fact.number, [], "number"
        else:
            for _ in range(10):  # two facts of different documents, of different values
                a_doc, b_doc = rng.sample(sorted(self.by_doc), 2)
                a, b = rng.choice(self.by_doc[a_doc]), rng.choice(self.by_doc[b_doc])
                if value(a.number) != value(b.number):
                    break
            hops = [_hop(a), _hop(b)]
            question = (f'Which number is larger: the one that fills the blank in "{a.sentence}" '
                        f'(document "{a.title}") or the one in "{b.sentence}" (document '
                        f'"{b.title}")? Answer with the title of its document.')
            win = a if value(a.number) >= value(b.number) else b
            answer, aliases, combine = win.title, [win.doc], "larger"
        return Task(id=f"{task_id}-{kind}", domain="search", kind=kind,
                    instruction=question + INSTRUCTION_TAIL,
                    setup={"corpus": self.corpus, "hops": hops, "combine": combine},
                    check={"answer": answer, "aliases": aliases})


def _hop(fact: Fact) -> dict[str, str]:
    return {"doc": fact.doc, "title": fact.title, "sentence": fact.sentence}
