"""``WebEnv``: a real browser on the local web apps (Gymnasium API, ``agentworld/web-v0``).

``reset`` serves a fresh world for the task (:class:`~agentworld.domains.web.apps.world.World`
of its seed), opens a fresh browser context at the task's start URL and returns the page's
observation; ``step`` runs one BrowserGym action (:mod:`agentworld.domains.web.actions`) and
returns the next observation (:func:`render`). Reward 1.0 and termination once the apps' state
satisfies the task (:func:`~agentworld.domains.web.tasks.is_done`); on a MiniWoB++ page
the page's own reward decides (:mod:`agentworld.domains.web.miniwob_tasks`). A malformed or failing
action is an ``Error:`` line in the observation (reward 0, the episode goes on), never an
exception. Off-host navigation, a hung page and a crashed renderer are contained
(:mod:`agentworld.domains.web.browser`) and reported the same way.

With ``url=`` (an app the user runs) or ``site=`` (a folder of static files served on loopback)
the browser reaches the user's own site instead, and nothing else
(:mod:`agentworld.domains.web.site_target`); its tasks are synthesised from the site's pages
(:mod:`agentworld.domains.web.site_tasks`) and done once the tab shows the page asked for, or
a form of the page asked for was submitted.

The browser and the apps' server start at the first reset and stop at :meth:`WebEnv.close`
(also at garbage collection of the env and at interpreter exit).
"""

from __future__ import annotations

import atexit
import json
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import gymnasium
from gymnasium import spaces

from agentworld.core.types import Action, ObservationText, Task
from agentworld.domains.web import axtree, miniwob_tasks
from agentworld.domains.web.actions import ActionError, BrowserAction, parse
from agentworld.domains.web.apps.server import HOSTS, AppServer
from agentworld.domains.web.browser import Browser, Tab
from agentworld.domains.web.site_target import SiteTarget
from agentworld.domains.web.site_tasks import SiteTaskSampler, site_done
from agentworld.domains.web.tasks import WebTaskSampler, is_done

ACTION_MAX_LENGTH = 4096
OBSERVATION_MAX_LENGTH = 200_000
_CHARSET = frozenset(chr(c) for c in range(32, 0x2FFF)) | {"\n", "\t"}
_OPEN: weakref.WeakSet[WebEnv] = weakref.WeakSet()


def render(url: str, focused: str | None, tree: str, error: str = "") -> str:
    """The observation text::

        URL: http://shop.test/cart
        Focused element: [17]            (or: none)
        Error: ...                       (only after a failed action)

        RootWebArea 'Cart - Shop', focused
        \t[1] navigation 'Shop'
        ...
    """
    head = [f"URL: {url}", f"Focused element: [{focused}]" if focused else "Focused element: none"]
    if error:
        head.append(f"Error: {error}")
    return "\n".join(head) + "\n\n" + tree


def parse_observation(text: str) -> tuple[dict[str, str], str]:
    """``({"URL": ..., "Focused element": ..., "Error": ...}, tree)`` of an observation text
    (fields absent from it are absent from the dict)."""
    head, _, tree = text.partition("\n\n")
    fields = {}
    for line in head.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            fields[key] = value
    return fields, tree


class WebEnv(gymnasium.Env):
    """A real web environment.

    Args:
        tasks: Sampler drawing a task at each ``reset`` without one (default
            :class:`WebTaskSampler`).
        timeout_s: Seconds an action or the page may take before it counts as hung.
        chromium: The Chromium executable (default:
            :func:`~agentworld.domains.web.browser.find_chromium`).
        url: The user's own web app (``http://HOST:PORT/``), the only origin the browser may
            reach; its requests carry no header of ours.
        site: A folder of the user's static files, served on loopback as
            ``http://site.test/`` (exclusive with ``url``).

    Spaces: ``action_space`` is ``spaces.Text`` of one action (up to 4096 characters);
    ``observation_space`` ``spaces.Text`` up to 200,000 characters.
    """

    metadata = {"render_modes": []}

    def __init__(self, tasks: WebTaskSampler | None = None, timeout_s: float = 5.0,
                 chromium: str | None = None, url: str | None = None,
                 site: Path | str | None = None) -> None:
        if url is not None and site is not None:
            raise ValueError("give url= or site=, not both")
        self.url, self.site = url, site
        self.tasks = tasks or (None if url or site else WebTaskSampler())
        self.target: SiteTarget | None = None
        self.timeout_s, self.chromium = timeout_s, chromium
        self.action_space = spaces.Text(ACTION_MAX_LENGTH, min_length=1, charset=_CHARSET)
        self.observation_space = spaces.Text(OBSERVATION_MAX_LENGTH, min_length=0,
                                             charset=_CHARSET)
        self.server: AppServer | None = None
        self.browser: Browser | None = None
        self.tab: Tab | None = None
        self.task: Task | None = None
        self.done = False
        self.last_url = ""
        self.last_tree = ""
        self.page_url = ""

    # -- lifecycle -----------------------------------------------------------------------
    def _start(self) -> None:
        if self.url or self.site:
            if self.target is None:
                self.target = SiteTarget(self.url, self.site)
            if self.tasks is None:
                self.tasks = SiteTaskSampler(self.target.pages(), self.target.start_url)
        elif self.server is None:
            self.server = AppServer()
        if self.browser is None:
            rules = (self.target or self.server).resolver_rules()
            self.browser = Browser(rules, self.chromium)
            _OPEN.add(self)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[ObservationText, dict[str, Any]]:
        """Start an episode: a fresh world and browser context at the task's start URL.
        ``options={"task": Task}`` (or its dict) sets the task; without one it is drawn.

        Raises:
            agentworld.core.errors.EnvironmentUnavailableError: no Chromium, or it fails.
            ValueError: a site task without ``url``/``site``, or a built-in app's task with.
        """
        super().reset(seed=seed)
        self._start()
        task = (options or {}).get("task")
        if task is None:
            task = self.tasks.sample(1, seed=int(self.np_random.integers(2**31)))[0]
        task = task if isinstance(task, Task) else Task.model_validate(task)
        if bool(task.setup.get("site")) != (self.target is not None):
            raise ValueError(f"task {task.id!r} is " + (
                "a task of the user's own site; this env was given no url= or site="
                if self.target is None else "a built-in app's task; this env runs the user's site"))
        self.task = task
        if self.tab is not None:
            self.tab.close()
        if self.target is not None:
            self.target.reset(0)
            self.tab = Tab(self.browser, set(), self.timeout_s, self.target.headers(),
                           allow=self.target.allowed)
        else:
            self.server.reset(int(self.task.setup.get("world_seed", 0)))
            self.tab = Tab(self.browser, set(HOSTS), self.timeout_s, self.server.headers())
        error = self._run(BrowserAction("goto", {"url": self.start_url()}))
        if self.task.setup.get("miniwob") and not error:
            with self.tab.guard():
                self.tab.page.evaluate(miniwob_tasks.START_JS, int(self.task.setup["world_seed"]))
        self.done = False
        return self._observe(error), {"task": self.task.id}

    def close(self) -> None:
        """Close the episode's context, the browser, Playwright's driver and the server
        (idempotent)."""
        if self.tab is not None:
            self.tab.close()
            self.tab = None
        if self.browser is not None:
            self.browser.close()
            self.browser = None
        if self.server is not None:
            self.server.close()
            self.server = None
        if self.target is not None:
            self.target.close()
            self.target = None
        _OPEN.discard(self)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def start_url(self) -> str:
        return str(self.task.setup.get("start_url", "http://shop.test/")) if self.task else ""

    def reachable(self) -> str:
        """What the browser may reach, for error lines."""
        if self.target is not None:
            parts = urlsplit(self.target.start_url)
            return f"only the site {parts.scheme}://{parts.netloc}/ is reachable"
        return f"only {', '.join('http://' + h + '/' for h in HOSTS)} are reachable"

    # -- steps ---------------------------------------------------------------------------
    def step(self, action: Action | str) -> tuple[ObservationText, float, bool, bool, dict[str, Any]]:
        """Run one action; ``(observation, reward, terminated, truncated, info)`` with
        ``info["action"]`` (its name, ``None`` when malformed) and ``info["error"]``.

        Raises:
            RuntimeError: the episode has not been reset, or has ended.
        """
        if self.task is None or self.tab is None or self.done:
            raise RuntimeError("no episode is running (never reset, or it has ended): call reset()")
        text = action.text if isinstance(action, Action) else str(action)
        name = None
        try:
            parsed = parse(text)
            name = parsed.name
            error = self._run(parsed)
        except ActionError as exc:
            error = str(exc)
        observation = self._observe(error)
        reward, self.done = self._outcome()
        info = {"action": name, "error": bool(observation.state["error"])}
        return observation, reward, self.done, False, info

    def _outcome(self) -> tuple[float, bool]:
        """``(reward, terminated)``: the apps' state checked against the task, or for a
        MiniWoB++ task the page's own verdict (done, raw reward > 0)."""
        from playwright.sync_api import Error

        if self.task.setup.get("site"):
            done = site_done(self.task.check, self.tab.page.url, self.tab.submitted_from)
            return float(done), done
        if not self.task.setup.get("miniwob"):
            done = is_done(self.server.world, self.task.check)
            return float(done), done
        try:
            with self.tab.guard():
                done, raw = json.loads(self.tab.page.wait_for_function(  # text: axtree.MARK_JS
                    miniwob_tasks.REWARD_JS, timeout=self.tab.timeout_ms).json_value())
        except Error:  # the page was replaced: the MiniWoB++ episode is lost
            return 0.0, False
        return (1.0 if done and raw > 0 else 0.0), bool(done)

    def _run(self, action: BrowserAction) -> str:
        """Run ``action`` on the tab; the error text (``""`` when it went through)."""
        from playwright.sync_api import Error, TimeoutError

        tab, args = self.tab, action.arguments
        page = tab.page
        tab.blocked.clear()
        try:
            tab.poll()  # a hung page times out here, not in a call without a timeout
            if action.name == "goto":
                if not tab.allowed(args["url"]):
                    return f"navigation to {args['url']!r} blocked: {self.reachable()}"
                with tab.guard():
                    page.goto(args["url"], wait_until="load")
            elif action.name == "go_back":
                with tab.guard():
                    page.go_back(wait_until="load")
            elif action.name == "go_forward":
                with tab.guard():
                    page.go_forward(wait_until="load")
            elif action.name == "noop":
                page.wait_for_timeout(min(max(float(args["wait_ms"]), 0), 5000))
            elif action.name == "scroll":
                with tab.guard():
                    page.mouse.wheel(float(args["delta_x"]), float(args["delta_y"]))
                page.wait_for_timeout(50)
            else:
                if not tab.has_bid(args["bid"]):
                    return f"no element with bid {args['bid']!r} on this page"
                element = page.locator(f'[bid="{args["bid"]}"]')
                with tab.guard(2):  # the action, then the load it may start
                    if action.name == "click":
                        element.click(button=args["button"])
                    elif action.name == "fill":
                        element.fill(args["value"])
                    elif action.name == "select_option":
                        element.select_option(args["options"])
                    else:
                        element.press(args["key_comb"])
                    page.wait_for_load_state("load")
        except TimeoutError:
            return f"{action.name} timed out after {self.timeout_s:g} s"
        except Error as exc:
            if tab.blocked or tab.crashed or tab.hung:
                return ""  # reported by _observe
            return f"{action.name} failed: {str(exc).splitlines()[0][:300]}"
        return ""

    def _observe(self, error: str) -> ObservationText:
        """The page's observation after an action (recovering a blocked, hung or crashed
        page first, with the reason as the error)."""
        from playwright.sync_api import Error, TimeoutError

        tab = self.tab
        if tab.blocked:
            error = (f"navigation to {tab.blocked[0]!r} blocked: it is off-host ("
                     + ("only the local apps are reachable" if self.target is None
                        else self.reachable()) + "); the tab went back")
            if not tab.allowed(tab.page.url):
                tab.replace(self.last_url or self.start_url())
        hung = (f"the page stopped responding (no answer within {self.timeout_s:g} s); its "
                f"tab was closed and a new one opened at {self.start_url()}")
        crashed = f"the page crashed; its tab was replaced by a new one at {self.start_url()}"
        if tab.crashed or tab.hung:
            error = hung if tab.hung else crashed
            tab.replace(self.start_url())
        try:
            tree, focused = tab.snapshot()
        except (TimeoutError, Error) as exc:
            error = hung if isinstance(exc, TimeoutError) or tab.hung else crashed
            tab.replace(self.start_url())
            tree, focused = self._snapshot_or_empty()
        url = tab.page.url
        if tab.allowed(url):
            self.last_url = url
        self.last_tree, self.page_url = tree, url
        text = render(url, focused, tree, error)
        return ObservationText(text, {"url": url, "focused": focused, "error": error or None})

    def _snapshot_or_empty(self) -> tuple[str, str | None]:
        from playwright.sync_api import Error

        try:
            return self.tab.snapshot()
        except Error:
            return "", None

    def privileged_state(self) -> dict[str, Any]:
        """The state behind the last observation: the apps' state
        (:meth:`~agentworld.domains.web.apps.world.World.snapshot`; on the user's site
        ``submitted_from``, the pages whose forms were submitted), ``url``, and ``targets``
        (bid -> ``role 'name'`` of the page's interactive elements,
        :func:`~agentworld.domains.web.axtree.targets`)."""
        state = self.server.world.snapshot() if self.server else {}
        if self.target is not None and self.tab is not None:
            state = {"submitted_from": list(self.tab.submitted_from)}
        return {**state, "url": self.page_url, "targets": axtree.targets(self.last_tree)}


@atexit.register
def _close_all() -> None:
    for env in list(_OPEN):
        env.close()
