"""A user's own corpus: a folder of Markdown, HTML and text documents (``--set corpus=DIR``).

Every regular file under the folder whose name ends in one of :data:`SUFFIXES` is one page
(sorted by path; hidden files and folders, symbolic links and files over
:data:`MAX_FILE_BYTES` are skipped). A page's URL is its path relative to the folder in POSIX
form (``guide/install.md``): the document id the tools show and cite. HTML is converted to
Markdown with ``markdownify`` (headings, links and lists kept; scripts and styles dropped);
text is read as UTF-8 (undecodable bytes replaced), HTML in the encoding it declares. The title is the HTML ``<title>``, else
the first Markdown heading (``# ...``) or reStructuredText title (a line underlined with
``=``, ``-``, ``~`` ...), else the file name.

The pages and their BM25 index are cached in ``$AGENTWORLD_CACHE/search``
(:mod:`agentworld.core.cache`) under the SHA-256 of the corpus content (paths and bytes), so
the index is built once per content and rebuilt when a document changes.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import asdict
from pathlib import Path

import bm25s
from agentworld.core.cache import private_dir
from agentworld.core.io import atomic_write

from agentworld.domains.search.corpus import Page, cache_dir
from agentworld.domains.search.engine import Engine

SUFFIXES = (".md", ".markdown", ".txt", ".rst", ".html", ".htm")
MAX_FILE_BYTES = 2_000_000
MAX_FILES = 20_000
MAX_PAGE_CHARS = 50_000
PAGES_VERSION = 2
"""Version of the conversion to pages, part of the cache's file names: a changed conversion
(2: declared encodings, no XML declaration) never reads pages cached by an older one."""
_MD_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_RST_UNDERLINE = re.compile(r"^([^\s].*?)\s*\n([=\-~^*+#`'\"])\2{2,}\s*$", re.MULTILINE)


class CorpusError(ValueError):
    """A folder that holds no usable document; the message is one line naming it."""


def document_files(directory: Path) -> list[tuple[str, Path]]:
    """``(document id, path)`` of the documents under ``directory``, sorted by id; symbolic
    links (to files or folders) and hidden names are skipped, so nothing outside the folder
    is read.

    Raises:
        CorpusError: ``directory`` is not a folder, or holds no document.
    """
    root = Path(directory)
    if not root.is_dir():
        raise CorpusError(f"corpus {str(directory)!r} is not a folder")
    out: list[tuple[str, Path]] = []
    stack = [root]
    while stack and len(out) < MAX_FILES:
        folder = stack.pop()
        for entry in sorted(folder.iterdir()):
            if entry.name.startswith(".") or entry.is_symlink():
                continue
            if entry.is_dir():
                stack.append(entry)
            elif entry.is_file() and entry.suffix.lower() in SUFFIXES and \
                    0 < entry.stat().st_size <= MAX_FILE_BYTES:
                out.append((entry.relative_to(root).as_posix(), entry))
    if not out:
        raise CorpusError(f"corpus {str(directory)!r} holds no document: no non-empty file "
                          f"ending in {', '.join(SUFFIXES)} (up to {MAX_FILE_BYTES:,} bytes)")
    return sorted(out)


def html_to_markdown(html: str | bytes) -> tuple[str, str]:
    """``(title, Markdown)`` of an HTML document (``markdownify``; ATX headings; ``script``,
    ``style``, ``head`` and ``nav`` dropped, and the XML declaration, doctype and comments:
    an XHTML page's ``<?xml version="1.0" encoding="ISO-8859-1"?>`` is no text); the title is
    ``<title>`` or ``""``. Bytes are decoded as the document declares (its XML declaration
    or ``<meta charset>``, by ``bs4``'s ``UnicodeDammit``), else as UTF-8 or a guess."""
    from bs4 import BeautifulSoup
    from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = " ".join(soup.title.get_text().split()) if soup.title else ""
    for tag in soup(["script", "style", "head", "nav", "noscript", "template"]):
        tag.decompose()
    for node in soup.find_all(string=lambda s: isinstance(
            s, Comment | Declaration | Doctype | ProcessingInstruction)):
        node.extract()
    text = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    return title, re.sub(r"\n{3,}", "\n\n", text).strip()


def title_of(text: str, fallback: str) -> str:
    """The first Markdown heading or reStructuredText title of ``text``, else ``fallback``."""
    found = [m for m in (_MD_HEADING.search(text), _RST_UNDERLINE.search(text)) if m]
    if not found:
        return fallback
    first = min(found, key=lambda m: m.start())
    return " ".join(first.group(1).split()).strip("*_` ") or fallback


def read_page(doc_id: str, path: Path) -> Page | None:
    """The page of one document, ``None`` when it holds no text."""
    data = path.read_bytes()
    if path.suffix.lower() in (".html", ".htm"):
        title, text = html_to_markdown(data)
    else:
        title, text = "", data.decode("utf-8", errors="replace").replace("\r\n", "\n").strip()
    if not text.strip():
        return None
    title = title or title_of(text, Path(doc_id).name)
    return Page(doc_id, title, text[:MAX_PAGE_CHARS], "N/A", "user")


def content_hash(files: list[tuple[str, Path]]) -> str:
    """SHA-256 (hex) of the documents' ids and bytes, in order."""
    digest = hashlib.sha256()
    for doc_id, path in files:
        data = path.read_bytes()
        digest.update(f"{doc_id}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def user_pages(directory: Path, cache: Path | None = None) -> tuple[list[Page], str]:
    """``(pages, content hash)`` of the corpus under ``directory``, read from the cache
    (``cache`` or :func:`~agentworld.domains.search.corpus.cache_dir`) when its content was
    read before, else converted and cached atomically.

    Raises:
        CorpusError: no document, or no document with text.
        OSError: a document cannot be read, or the cache cannot be written.
    """
    files = document_files(directory)
    digest = content_hash(files)
    path = (cache or cache_dir()) / f"user-{digest[:24]}-p{PAGES_VERSION}.jsonl"
    if path.is_file():
        pages = [Page(**json.loads(line)) for line in path.read_text("utf-8").splitlines() if line]
        return pages, digest
    pages = [p for p in (read_page(i, f) for i, f in files) if p is not None]
    if not pages:
        raise CorpusError(f"corpus {str(directory)!r} holds no document with text")
    private_dir(path.parent)
    atomic_write(str(path), "".join(json.dumps(asdict(p), ensure_ascii=False) + "\n"
                                    for p in pages))
    return pages, digest


@functools.cache
def load_user_engine(directory: str) -> tuple[Engine, str]:
    """``(engine, content hash)``: the BM25 engine over the corpus under ``directory``, its
    index cached beside the pages (``user-HASH-bm25sVERSION.index``); once per process and
    folder.

    Raises:
        CorpusError: no usable document.
        OSError: the cache cannot be written.
    """
    pages, digest = user_pages(Path(directory))
    index = f"user-{digest[:24]}-p{PAGES_VERSION}-bm25s{bm25s.__version__}.index"
    return Engine(pages, cache_dir() / index), digest
