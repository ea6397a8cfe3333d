"""One headless Chromium per environment, driven by Playwright, with one tab per episode.

The browser is Debian's ``chromium`` (no browser is downloaded): ``$AGENTWORLD_CHROMIUM``, else
the first of :data:`CANDIDATES` on ``PATH``. Each episode gets a fresh browser context
(cookies, storage and tabs of its own), closed at the next reset and at close, which is when
its memory is released.

Containment:

* Chromium's own sandbox where it can run (an ordinary user with user namespaces), else
  ``--no-sandbox`` (root), as :mod:`agentworld.domains.web.chromium_sandbox` decides and
  ``agentworld domains`` says;
* only the local apps are reachable: Chromium resolves their host names to the apps' server
  and no other name (``--host-resolver-rules``), and every request to another origin is
  aborted by a route on the context; a blocked main-frame navigation is reported
  (:attr:`Tab.blocked`) and the tab goes back to the page it was on;
* a page that stops answering (no reply to a poll within ``timeout_s``) or whose renderer
  crashes has its tab closed and replaced (:meth:`Tab.replace`); a call that Playwright's
  timeouts do not bound runs under a :class:`~agentworld.domains.web.watchdog.Watchdog`
  deadline, which kills the renderer of a page that never answers (:attr:`Tab.hung`);
* :meth:`Browser.close` closes the browser and stops Playwright's driver; Playwright's driver
  closes the browser when its own parent dies (its stdin pipe closes), so a killed collector
  leaves no Chromium behind.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from agentworld.core.errors import EnvironmentUnavailableError
from agentworld.domains.web import axtree
from agentworld.domains.web.chromium_sandbox import sandbox_flags
from agentworld.domains.web.watchdog import BROWSER_VAR, Watchdog

SUBMIT_BINDING = "__agentworldSubmitted"
SUBMIT_JS = (f"document.addEventListener('submit', () => {{ try {{ window.{SUBMIT_BINDING}"
             "(location.href); } catch (e) {} }, true);")
"""Reports each form submission (the event fires once the browser's validation passed)."""
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_VAR = "AGENTWORLD_CHROMIUM"


def find_chromium() -> str:
    """The Chromium executable to drive.

    Raises:
        EnvironmentUnavailableError: ``$AGENTWORLD_CHROMIUM`` names no executable file, or
            none of :data:`CANDIDATES` is on ``PATH``.
    """
    given = os.environ.get(CHROMIUM_VAR)
    if given:
        if os.path.isfile(given) and os.access(given, os.X_OK):
            return given
        raise EnvironmentUnavailableError(f"${CHROMIUM_VAR}={given!r} is not an executable file")
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    raise EnvironmentUnavailableError(
        "the web domain needs Chromium: install Debian's package (apt-get install chromium) "
        f"or set ${CHROMIUM_VAR} to a Chromium executable")


class Browser:
    """Playwright and one headless Chromium whose host names resolve to ``resolver_rules``.

    Args:
        resolver_rules: Chromium's ``--host-resolver-rules``
            (:meth:`~agentworld.domains.web.apps.server.AppServer.resolver_rules`).
        executable: The Chromium binary (default :func:`find_chromium`).

    Raises:
        EnvironmentUnavailableError: no Chromium, or it does not start.
    """

    def __init__(self, resolver_rules: str, executable: str | None = None) -> None:
        from playwright.sync_api import Error, sync_playwright

        executable = executable or find_chromium()
        self.id = uuid.uuid4().hex  # in the environment of the browser and its renderers
        self._playwright = sync_playwright().start()
        try:
            self.browser = self._playwright.chromium.launch(
                executable_path=executable, headless=True, timeout=60_000,
                chromium_sandbox=not sandbox_flags(),  # else Playwright adds --no-sandbox
                env={**os.environ, BROWSER_VAR: self.id},
                args=[*sandbox_flags(), "--disable-dev-shm-usage", "--disable-gpu",
                      "--disable-extensions", "--no-first-run", "--disable-sync",
                      # nothing of Chromium's own reaches out: no update, metrics or QUIC
                      # probes (on a closed network each would wait on DNS or be refused)
                      "--disable-background-networking", "--disable-component-update",
                      "--disable-quic", "--disable-default-apps", "--no-default-browser-check",
                      f"--host-resolver-rules={resolver_rules}"])
        except Error as error:
            self._playwright.stop()
            raise EnvironmentUnavailableError(
                f"Chromium {executable} did not start: {str(error).splitlines()[0]}") from None

    def close(self) -> None:
        """Close the browser and stop Playwright's driver (idempotent)."""
        from playwright.sync_api import Error

        try:
            if self.browser.is_connected():
                self.browser.close()
        except Error:
            pass
        try:
            self._playwright.stop()
        except Exception:  # noqa: BLE001 - the driver may already be gone
            pass


class Tab:
    """One episode: a fresh browser context with one page.

    Args:
        browser: The :class:`Browser`.
        hosts: Host names the page may reach (``http://HOST/`` only).
        timeout_s: Seconds an action or a poll of the page may take before it counts as hung.
        headers: HTTP headers sent with every request of the context (the apps' episode key).
        allow: Which URLs the page may reach instead of ``hosts`` (the user's own site's
            origin, :class:`~agentworld.domains.web.site_target.SiteTarget`); with it every
            form submission of the context is recorded in :attr:`submitted_from` (the URL of
            the page whose form was submitted, in order).
    """

    #: Seconds past ``timeout_s`` before the watchdog kills a renderer that never answered.
    GRACE_S = 2.0

    def __init__(self, browser: Browser, hosts: set[str], timeout_s: float,
                 headers: dict[str, str] | None = None,
                 allow: Callable[[str], bool] | None = None) -> None:
        self.hosts, self.timeout_ms, self.allow = hosts, int(timeout_s * 1000), allow
        self.submitted_from: list[str] = []
        self.watchdog = Watchdog(browser.id)
        self.context = browser.browser.new_context(viewport={"width": 1024, "height": 768},
                                                   extra_http_headers=headers or {})
        self.context.set_default_timeout(self.timeout_ms)
        self.context.route("**/*", self._route)
        if allow is not None:
            self.context.expose_binding(SUBMIT_BINDING, self._on_submit)
            self.context.add_init_script(SUBMIT_JS)
        self.blocked: list[str] = []
        self.crashed = False
        self.page = self._new_page()

    def allowed(self, url: str) -> bool:
        """Whether ``url`` is on one of the apps (``http``, an app host, port 80), or
        ``allow(url)`` when given."""
        if self.allow is not None:
            return self.allow(url)
        parts = urlsplit(url)
        return parts.scheme == "http" and parts.hostname in self.hosts and parts.port in (None, 80)

    def _route(self, route: Any) -> None:
        request = route.request
        if self.allowed(request.url):
            route.continue_()
            return
        if request.is_navigation_request() and request.frame.parent_frame is None:
            self.blocked.append(request.url)
        route.abort("blockedbyclient")

    def _on_submit(self, source: Any, page_url: str) -> None:
        if isinstance(page_url, str) and self.allowed(page_url):
            self.submitted_from.append(page_url)

    def _new_page(self) -> Any:
        page = self.context.new_page()
        page.on("crash", self._on_crash)
        page.on("dialog", lambda dialog: dialog.dismiss())
        return page

    def _on_crash(self, page: Any) -> None:
        if page is self.page:
            self.crashed = True

    @property
    def hung(self) -> bool:
        """Whether the watchdog killed the page's renderer since the last :meth:`replace`."""
        return self.watchdog.fired

    @contextmanager
    def guard(self, timeouts: int = 1) -> Iterator[None]:
        """Run a block of calls into the page under a deadline of ``timeouts`` times
        ``timeout_s`` plus :attr:`GRACE_S`; past it the renderer is killed, and the pending
        call raises Playwright's ``Error``."""
        with self.watchdog.deadline(timeouts * self.timeout_ms / 1000 + self.GRACE_S):
            yield

    def replace(self, url: str) -> None:
        """Close the current page (without ``beforeunload``) and open ``url`` in a new one."""
        from playwright.sync_api import Error

        old, self.crashed, self.watchdog.fired = self.page, False, False
        with self.guard():
            try:
                old.close(run_before_unload=False)
            except Error:
                pass
        self.page = self._new_page()
        with self.guard():
            try:
                self.page.goto(url, wait_until="load")
            except Error:
                pass

    def poll(self) -> None:
        """Return once the page's main thread answers.

        Raises:
            playwright.sync_api.TimeoutError: no answer within ``timeout_s``.
        """
        with self.guard():
            self.page.wait_for_function("() => true", timeout=self.timeout_ms, polling=50)

    def has_bid(self, bid: str) -> bool:
        """Whether an element of the page has this bid (a poll: it times out like
        :meth:`poll`, where a plain evaluation would wait forever on a hung page)."""
        with self.guard():
            found = self.page.wait_for_function(
                "b => document.querySelector(`[bid=\"${CSS.escape(b)}\"]`) ? 'yes' : 'no'",
                arg=bid, timeout=self.timeout_ms, polling=50)
        return found.json_value() == "yes"

    def snapshot(self) -> tuple[str, str | None]:
        """``(tree text, focused bid)`` of the page: marks new elements, then reads the
        accessibility tree.

        Raises:
            playwright.sync_api.TimeoutError: the page did not answer within ``timeout_s``.
            playwright.sync_api.Error: the page crashed or closed.
        """
        with self.guard(2):
            marked = json.loads(self.page.wait_for_function(
                axtree.MARK_JS, timeout=self.timeout_ms, polling=50).json_value())
            session = self.context.new_cdp_session(self.page)
            try:
                document = session.send("DOM.getDocument", {"depth": -1})
                nodes = session.send("Accessibility.getFullAXTree")["nodes"]
            finally:
                session.detach()
        return axtree.flatten(nodes, axtree.bids_by_backend_id(document)), marked["focused"]

    def close(self) -> None:
        """Close the context, its pages and their memory (idempotent)."""
        from playwright.sync_api import Error

        with self.guard():
            try:
                self.context.close()
            except Error:
                pass
