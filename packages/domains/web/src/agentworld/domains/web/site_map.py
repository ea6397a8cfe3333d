"""A user's web site as pages, links and forms: read from its HTML over HTTP (:func:`crawl`).

The crawl starts at the site's start URL and follows same-origin links breadth first (HTML
pages only, at most ``max_pages``, within ``budget_s``); each page records its title, its
links (text and absolute URL, fragment dropped) and its forms with every field's type, name,
label, required flag, pattern, bounds and options, so that tasks can name the pages
(:mod:`agentworld.domains.web.site_tasks`) and the explorer can fill the forms with valid
values (:mod:`agentworld.domains.web.site_explorer`).
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

FIELD_TAGS = ("input", "select", "textarea")
SKIPPED_TYPES = ("hidden", "submit", "button", "reset", "image", "file")


@dataclass
class FormField:
    """One field of a form: ``tag`` (input/select/textarea), ``type`` (input type, lower
    case; ``select``/``textarea`` for those), ``attrs`` (its HTML attributes), ``label`` (its
    label's text, else aria-label, placeholder or title) and ``options`` (a select's
    ``(value, text)`` pairs)."""

    tag: str
    type: str
    attrs: dict[str, str]
    label: str = ""
    options: list[tuple[str, str]] = field(default_factory=list)

    @property
    def required(self) -> bool:
        return "required" in self.attrs


@dataclass
class Form:
    """A form: its absolute ``action`` URL, ``method``, fillable ``fields`` in document
    order (hidden fields and buttons left out) and ``submit``, the name of its first submit
    button (``""`` when it has none)."""

    action: str
    method: str
    fields: list[FormField] = field(default_factory=list)
    submit: str = ""


@dataclass
class Page:
    """One HTML page of the site: ``url`` (absolute, no fragment), ``title``, ``links``
    (``(text, url)`` in document order, same origin only) and ``forms``."""

    url: str
    title: str
    links: list[tuple[str, str]] = field(default_factory=list)
    forms: list[Form] = field(default_factory=list)


def origin(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of ``url`` (default ports filled in)."""
    parts = urlsplit(url)
    return (parts.scheme, (parts.hostname or "").lower(),
            parts.port or (443 if parts.scheme == "https" else 80))


def normalize(url: str) -> str:
    """``url`` without its fragment, with ``/`` for an empty path."""
    url = urldefrag(url)[0]
    parts = urlsplit(url)
    return url if parts.path else url + "/"


class _Parser(HTMLParser):
    def __init__(self, url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page(url, "")
        self.base = url
        self._title: list[str] | None = None
        self._link: list[str] | None = None
        self._href = ""
        self._labels: dict[str, str] = {}  # for= id -> text
        self._label: list[str] | None = None
        self._label_for = ""
        self._label_fields: list[FormField] = []
        self._option: list[str] | None = None
        self._select: FormField | None = None
        self._button: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v if v is not None else "") for k, v in attrs}
        if tag == "title":
            self._title = []
        elif tag == "base" and a.get("href"):
            self.base = urljoin(self.page.url, a["href"])
        elif tag == "a" and a.get("href"):
            self._link, self._href = [], a["href"]
        elif tag == "form":
            self.page.forms.append(Form(normalize(urljoin(self.base, a.get("action") or "")),
                                        (a.get("method") or "get").lower()))
        elif tag == "label":
            self._label, self._label_for, self._label_fields = [], a.get("for", ""), []
        elif tag == "button" and self.page.forms and (a.get("type") or "submit") == "submit":
            self._button = []
        elif tag in FIELD_TAGS:
            kind = (a.get("type") or "text").lower() if tag == "input" else tag
            if kind in ("submit", "image") and self.page.forms and not self.page.forms[-1].submit:
                self.page.forms[-1].submit = a.get("value") or a.get("alt") or "Submit"
            if kind in SKIPPED_TYPES or not self.page.forms:
                return
            item = FormField(tag, kind, a, a.get("aria-label") or a.get("placeholder")
                             or a.get("title") or "")
            self.page.forms[-1].fields.append(item)
            if self._label is not None:
                self._label_fields.append(item)
            if tag == "select":
                self._select = item
        elif tag == "option" and self._select is not None:
            self._option = []
            self._option_value = a.get("value")
            self._option_disabled = "disabled" in a

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._title is not None:
            self.page.title = " ".join("".join(self._title).split())
            self._title = None
        elif tag == "a" and self._link is not None:
            url = normalize(urljoin(self.base, self._href))
            if origin(url) == origin(self.page.url) and urlsplit(url).scheme in ("http", "https"):
                self.page.links.append((" ".join("".join(self._link).split()), url))
            self._link = None
        elif tag == "label" and self._label is not None:
            text = " ".join("".join(self._label).split())
            if self._label_for:
                self._labels[self._label_for] = text
            for item in self._label_fields:
                item.label = item.label or text
            self._label = None
        elif tag == "option" and self._option is not None and self._select is not None:
            text = " ".join("".join(self._option).split())
            value = text if self._option_value is None else self._option_value
            if not self._option_disabled:
                self._select.options.append((value, text))
            self._option = None
        elif tag == "select":
            self._select = None
        elif tag == "button" and self._button is not None:
            if not self.page.forms[-1].submit:
                self.page.forms[-1].submit = " ".join("".join(self._button).split())
            self._button = None

    def handle_data(self, data: str) -> None:
        for buffer in (self._title, self._link, self._label, self._option, self._button):
            if buffer is not None:
                buffer.append(data)

    def result(self) -> Page:
        for form in self.page.forms:
            for item in form.fields:
                if item.attrs.get("id") in self._labels and not item.label:
                    item.label = self._labels[item.attrs["id"]]
        return self.page


def parse_page(url: str, html: str) -> Page:
    """The :class:`Page` of ``html`` served at ``url``."""
    parser = _Parser(normalize(url))
    parser.feed(html)
    parser.close()
    return parser.result()


Fetch = Callable[[str], tuple[str, str, str]]
"""``fetch(url) -> (final url, content type, body text)``; raises ``OSError`` when it fails."""


def http_fetch(connect: tuple[str, int] | None = None, headers: dict[str, str] | None = None,
               timeout_s: float = 5.0) -> Fetch:
    """A :data:`Fetch` by plain HTTP/1.1 GET following up to 5 same-origin redirects.

    Args:
        connect: ``(ip, port)`` to connect to instead of the URL's host (a virtual host
            served on loopback); the URL's host goes in the ``Host`` header.
        headers: Extra request headers.
        timeout_s: Seconds per request.
    """

    def fetch(url: str) -> tuple[str, str, str]:
        for _ in range(6):
            parts = urlsplit(url)
            host, port = connect or (parts.hostname or "", origin(url)[2])
            conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
            try:
                path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                conn.request("GET", path, headers={"Host": parts.netloc, **(headers or {})})
                response = conn.getresponse()
                body = response.read(2_000_000)
            finally:
                conn.close()
            location = response.getheader("Location")
            if 300 <= response.status < 400 and location:
                target = normalize(urljoin(url, location))
                if origin(target) != origin(url):
                    raise OSError(f"{url} redirects off the site to {target}")
                url = target
                continue
            if response.status >= 400:
                raise OSError(f"{url} answered HTTP {response.status}")
            kind = response.getheader("Content-Type") or ""
            return url, kind, body.decode("utf-8", errors="replace")
        raise OSError(f"{url}: too many redirects")

    return fetch


def crawl(start: str, fetch: Fetch, max_pages: int = 60, budget_s: float = 20.0) -> list[Page]:
    """The site's HTML pages reachable from ``start`` by same-origin links, breadth first
    (``start`` first; pages that fail to load, are not HTML or repeat an earlier page's
    bytes left out).

    Raises:
        OSError: ``start`` itself does not load.
    """
    start = normalize(start)
    final, kind, body = fetch(start)
    pages = [parse_page(final, body)]
    seen, bodies = {start, final}, {hash(body)}
    queue = [url for _, url in pages[0].links]
    deadline = time.monotonic() + budget_s
    while queue and len(pages) < max_pages and time.monotonic() < deadline:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        try:
            final, kind, body = fetch(url)
        except OSError:
            continue
        if "html" not in kind.lower() or final in {p.url for p in pages} or hash(body) in bodies:
            continue  # not a page, or one already found (``dir/`` and ``dir/index.html``)
        bodies.add(hash(body))
        page = parse_page(final, body)
        pages.append(page)
        queue += [link for _, link in page.links if link not in seen]
    return pages


def _signature(form: Form) -> tuple[str, str, tuple[str, ...], str]:
    return (urlsplit(form.action).path, form.method.lower(),
            tuple(f.attrs.get("name", f.label) for f in form.fields), form.submit)


def own_forms(page: Page, pages: list[Page]) -> list[Form]:
    """The forms of ``page`` that are its own: a form every page repeats (same action path,
    method, field names and button on more than half of at least three pages: a navigation
    bar's search or "new table" box) belongs to the first page that has it only, so a task
    "submit the form on page X" means the form X adds (sqlite-web's "Drop table", not its
    navigation bar's "Create")."""
    counts: dict[tuple[str, str, tuple[str, ...], str], list[str]] = {}
    for other in pages:
        for sig in dict.fromkeys(_signature(f) for f in other.forms):
            counts.setdefault(sig, []).append(other.url)
    shared = {sig for sig, urls in counts.items() if len(urls) >= 3 and len(urls) * 2 > len(pages)}
    return [f for f in page.forms if _signature(f) not in shared
            or counts[_signature(f)][0] == page.url]
