"""The offline corpus: real Python documentation plus a generated fictional world.

Two sources, both deterministic for a given Python version and world seed:

* ``docs``: the docstrings of the Python standard library modules in :data:`DOC_MODULES`
  (the installed interpreter's own documentation, read with :func:`pydoc.getdoc`): one page
  per module and one per public function or class it defines, at the URL of its entry in
  the official library reference (``https://docs.python.org/3/library/json.html#json.dumps``).
* ``world``: the encyclopedia and news pages of a seeded fictional world
  (:mod:`agentworld.domains.search.world`), whose facts agree across pages.

The corpus is built once and kept as JSON lines in the agentworld cache
(``$AGENTWORLD_CACHE/search``, :mod:`agentworld.core.cache`: a private directory), written
atomically; the file name holds the corpus version, the Python version and the world seed.
The BM25 index over it is cached beside it (:func:`agentworld.domains.search.engine.load_engine`).
"""

from __future__ import annotations

import importlib
import json
import pydoc
import sys
import types
from dataclasses import asdict
from pathlib import Path

from agentworld.core.cache import cache_root, private_dir
from agentworld.core.io import atomic_write
from agentworld.domains.search.page import Page

__all__ = [
    "CORPUS_VERSION", "DOC_MODULES", "DOCS_URL", "MAX_DOC_CHARS", "Page", "build_corpus",
    "cache_dir", "corpus_path", "docs_pages",
]

CORPUS_VERSION = "1"
DOCS_URL = "https://docs.python.org/3/library"
MAX_DOC_CHARS = 4000
DOC_MODULES: tuple[str, ...] = (
    "abc", "argparse", "base64", "bisect", "calendar", "codecs", "collections", "colorsys",
    "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "email.utils",
    "enum", "filecmp", "fnmatch", "fractions", "functools", "getopt", "gettext", "glob",
    "graphlib", "gzip", "hashlib", "heapq", "hmac", "html", "html.parser", "http.cookies",
    "ipaddress", "itertools", "json", "keyword", "linecache", "locale", "logging", "lzma",
    "mimetypes", "numbers", "operator", "os.path", "pathlib", "pickle", "pprint", "queue",
    "quopri", "random", "re", "reprlib", "sched", "secrets", "shlex", "shutil", "statistics",
    "string", "struct", "tarfile", "tempfile", "textwrap", "threading", "timeit", "tokenize",
    "tomllib", "typing", "unicodedata", "urllib.parse", "uuid", "warnings", "weakref",
    "xml.etree.ElementTree", "zipfile", "zlib",
)
"""Standard-library modules whose documentation is in the corpus (75 modules)."""
_DOCUMENTED = (types.FunctionType, types.BuiltinFunctionType, type)


def docs_pages(modules: tuple[str, ...] = DOC_MODULES) -> list[Page]:
    """Pages of the standard library's docstrings: for each module of ``modules`` its own
    page, then one per public function or class defined in it (sorted by name) that has a
    docstring. Text is cut at :data:`MAX_DOC_CHARS` characters.

    Raises:
        ModuleNotFoundError: a module of ``modules`` is not installed.
    """
    pages: list[Page] = []
    for modname in modules:
        module = importlib.import_module(modname)
        anchor = f"{DOCS_URL}/{modname}.html"
        doc = pydoc.getdoc(module)
        if doc:
            pages.append(Page(f"{anchor}#module-{modname}",
                              f"{modname} — Python standard library", doc[:MAX_DOC_CHARS]))
        names = vars(module).get("__all__") or [n for n in vars(module) if not n.startswith("_")]
        for name in sorted(set(names)):
            obj = vars(module).get(name)
            if not isinstance(obj, _DOCUMENTED) or name.startswith("_"):
                continue
            owner = str(obj.__module__ or "").lstrip("_")
            if owner not in (modname, modname.split(".")[0]):
                continue  # re-exported from elsewhere (typing's aliases, os.path's genericpath)
            text = pydoc.getdoc(obj)
            if len(text) < 20:
                continue
            pages.append(Page(f"{anchor}#{modname}.{name}", f"{modname}.{name}",
                              f"{modname}.{name}\n\n{text[:MAX_DOC_CHARS]}"))
    return pages


def cache_dir() -> Path:
    """The search cache directory, ``$AGENTWORLD_CACHE/search``
    (:func:`agentworld.core.cache.cache_root`); made private when first written."""
    return cache_root() / "search"


def corpus_path(world_seed: int, directory: Path | None = None) -> Path:
    """Where the corpus of ``world_seed`` is cached (``directory`` or :func:`cache_dir`)."""
    py = f"py{sys.version_info.major}.{sys.version_info.minor}"
    return (directory or cache_dir()) / f"corpus-v{CORPUS_VERSION}-{py}-world{world_seed}.jsonl"


def build_corpus(world_seed: int = 0, directory: Path | None = None) -> list[Page]:
    """The corpus (docs pages, then the world's pages), read from the cache when there,
    else built and written there atomically.

    Args:
        world_seed: Seed of the fictional world (:func:`~agentworld.domains.search.world.make_world`).
        directory: Cache directory (default :func:`cache_dir`).

    Raises:
        ValueError: ``world_seed`` is negative.
        OSError: the cache cannot be written.
    """
    from agentworld.domains.search.world import make_world, world_pages

    if world_seed < 0:
        raise ValueError(f"world_seed must be >= 0, got {world_seed}")
    path = corpus_path(world_seed, directory)
    if path.is_file():
        return [Page(**json.loads(line)) for line in path.read_text("utf-8").splitlines() if line]
    pages = docs_pages() + world_pages(make_world(world_seed))
    lines = "".join(json.dumps(asdict(p), ensure_ascii=False) + "\n" for p in pages)
    private_dir(path.parent)
    atomic_write(str(path), lines)
    return pages
