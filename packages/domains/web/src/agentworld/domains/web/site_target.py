"""The user's own web site as the browser's only reachable origin (``--set url=`` or ``--set site=``).

* ``url=http://HOST:PORT/``: an app the user runs. The browser may reach that origin only
  (scheme, host and port); every other name is unresolvable and every other request aborted.
  Its requests carry no header of ours (the built-in apps' episode key is theirs alone).
* ``site=DIR``: the folder's static files, served by :class:`SiteServer` on a free loopback
  port as the virtual host ``http://site.test/`` (stable URLs whatever the port), behind the
  same per-episode key as the built-in apps (another local user cannot read them through
  the port).

:func:`check_url` and :func:`check_site` tell an unusable target in one line before any file
is written.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from agentworld.domains.web.apps.server import AppServer
from agentworld.domains.web.site_map import Fetch, crawl, http_fetch, origin, Page

SITE_HOST = "site.test"
SITE_URL = f"http://{SITE_HOST}/"


class TargetError(ValueError):
    """A ``url`` or ``site`` option that names no usable web site (one line)."""


def check_url(url: str, timeout_s: float = 5.0) -> str:
    """``url`` normalized (``/`` for an empty path) once its server answers a GET with a page.

    Raises:
        TargetError: not an ``http://HOST[:PORT]/...`` URL, or no answer (refused, timeout,
            an HTTP error status).
    """
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise TargetError(f"url {url!r} is not an http://HOST[:PORT]/ URL of a web app "
                          "(https is not supported; serve it on loopback over http)")
    try:
        parts.port
    except ValueError:
        raise TargetError(f"url {url!r} has an invalid port") from None
    url = url if parts.path else url + "/"
    try:
        http_fetch(timeout_s=timeout_s)(url)
    except OSError as exc:
        raise TargetError(f"url {url!r} does not answer: {exc}") from None
    return url


def check_site(folder: Path) -> Path:
    """``folder`` resolved, once it holds an ``index.html`` or another ``.html`` file.

    Raises:
        TargetError: not a folder, or no HTML file in it.
    """
    if not folder.is_dir():
        raise TargetError(f"site {str(folder)!r} is not a folder of static files")
    if not (folder / "index.html").is_file() and next(folder.rglob("*.html"), None) is None:
        raise TargetError(f"site {str(folder)!r} holds no .html file to start at")
    return folder.resolve()


def _start_path(folder: Path) -> str:
    if (folder / "index.html").is_file():
        return ""
    return str(min(folder.rglob("*.html")).relative_to(folder))


class SiteServer(AppServer):
    """``folder``'s files served on ``127.0.0.1:port`` (any Host; folders answer with their
    ``index.html``) until :meth:`close`, behind the per-episode key.

    Raises:
        RuntimeError: the server did not start within 10 s.
    """

    def __init__(self, folder: Path) -> None:
        self.world = None
        self.key = secrets.token_urlsafe(32)
        files = StaticFiles(directory=folder, html=True)
        self._serve(Starlette(routes=[Mount("/", files)]), "web-site")  # 404s as responses

    def reset(self, seed: int) -> None:  # type: ignore[override]
        """A new key (the previous episode's browser context is refused)."""
        self.key = secrets.token_urlsafe(32)

    def resolver_rules(self) -> str:
        """``site.test`` to this server, every other name unresolvable."""
        return f"MAP {SITE_HOST} 127.0.0.1:{self.port}, MAP * ~NOTFOUND"


class SiteTarget:
    """The user's site of a ``url`` or ``site`` option (exactly one of them).

    Attributes:
        start_url: Where episodes start (the URL, or ``http://site.test/`` + the site's
            first page).
        origin: ``(scheme, host, port)`` the browser may reach.

    Raises:
        TargetError: both or neither given.
    """

    def __init__(self, url: str | None = None, site: Path | str | None = None) -> None:
        if (url is None) == (site is None):
            raise TargetError("give exactly one of url=http://HOST:PORT/ and site=DIR")
        self.url, self.server = url, None
        if site is not None:
            folder = Path(site)
            self.server = SiteServer(folder)
            self.start_url = SITE_URL + _start_path(folder)
        else:
            parts = urlsplit(url)
            self.start_url = url if parts.path else url + "/"
        self.origin = origin(self.start_url)

    def allowed(self, url: str) -> bool:
        """Whether ``url`` is on the site's origin."""
        return origin(url) == self.origin

    def headers(self) -> dict[str, str]:
        """Headers of the episode's requests: the key for a served folder, none for a URL."""
        return self.server.headers() if self.server else {}

    def reset(self, seed: int) -> None:
        """A new episode (a served folder's key is drawn again)."""
        if self.server:
            self.server.reset(seed)

    def resolver_rules(self) -> str:
        """Chromium's ``--host-resolver-rules``: only the site's host resolves."""
        if self.server:
            return self.server.resolver_rules()
        return f"MAP * ~NOTFOUND, EXCLUDE {self.origin[1]}"

    def fetch(self) -> Fetch:
        """A plain HTTP :data:`~agentworld.domains.web.site_map.Fetch` of the site's pages."""
        if self.server:
            return http_fetch(("127.0.0.1", self.server.port), self.server.headers())
        return http_fetch()

    def pages(self, max_pages: int = 60) -> list[Page]:
        """The site's pages (:func:`~agentworld.domains.web.site_map.crawl` from the start).

        Raises:
            TargetError: the start page does not load.
        """
        try:
            return crawl(self.start_url, self.fetch(), max_pages)
        except OSError as exc:
            raise TargetError(f"{self.start_url} does not answer: {exc}") from None

    def close(self) -> None:
        """Stop a served folder's server (idempotent)."""
        if self.server:
            self.server.close()
