"""A deadline on calls into a page that Playwright's own timeouts do not bound.

Playwright (1.65) times out ``wait_for_function`` and then awaits one more evaluation in the
page (its poller's ``abort``); on a page whose main thread has gone into an endless loop that
evaluation never answers, and the call never returns. CDP calls (``DOM.getDocument``) and
``page.evaluate`` take no timeout at all. A :class:`Watchdog` is a timer around such a call:
when it fires, it kills the browser's renderer processes (found by the browser's tag in their
environment, which Chromium's renderers inherit), the pending call fails with Playwright's
``Error`` ("Target crashed"), and the caller replaces the tab. Only renderers are killed; the
browser and Playwright's driver stay up. On systems without ``/proc`` no renderer is found and
the deadline does nothing.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BROWSER_VAR = "AGENTWORLD_BROWSER_ID"


def _read(pid: str, name: str) -> bytes:
    with open(f"/proc/{pid}/{name}", "rb") as f:
        return f.read()


def renderer_pids(browser_id: str) -> list[int]:
    """Pids of the live Chromium renderers under the browser whose environment holds
    ``BROWSER_VAR=browser_id``. Renderers are found as the browser's descendants: Chromium
    rewrites their command line (``--type=renderer`` stays in it) and their environment."""
    needle = f"{BROWSER_VAR}={browser_id}".encode()
    children: dict[str, list[str]] = {}
    roots = []
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not pid.isdigit():
            continue
        try:
            parent = _read(pid, "stat").rsplit(b")", 1)[1].split()[1].decode()
            if needle in _read(pid, "environ").split(b"\0"):
                roots.append(pid)
        except (OSError, IndexError):  # gone, or not ours to read
            continue
        children.setdefault(parent, []).append(pid)
    found, seen, todo = [], set(roots), [c for r in roots for c in children.get(r, [])]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo += children.get(pid, [])
        try:
            if b"--type=renderer" in _read(pid, "cmdline").replace(b"\0", b" ").split():
                found.append(int(pid))
        except OSError:
            continue
    return found


class Watchdog:
    """Deadlines on calls into one browser's pages.

    Args:
        browser_id: The value of :data:`BROWSER_VAR` in the browser's environment.
    """

    def __init__(self, browser_id: str) -> None:
        self.browser_id = browser_id
        self.fired = False

    def _fire(self) -> None:
        self.fired = True
        for pid in renderer_pids(self.browser_id):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    @contextmanager
    def deadline(self, seconds: float) -> Iterator[None]:
        """Kill the browser's renderers if the block runs longer than ``seconds`` (wall
        clock); :attr:`fired` tells afterwards that it did."""
        timer = threading.Timer(seconds, self._fire)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
