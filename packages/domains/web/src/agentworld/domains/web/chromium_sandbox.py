"""Whether Chromium runs with its own sandbox here, and the flags that say so.

Chromium's sandbox puts each renderer (the process that runs a page's JavaScript) in user, pid
and network namespaces of its own with a seccomp filter, so a page that exploits the renderer
still cannot read the user's files or reach the network. It needs unprivileged user namespaces
(Debian's ``chromium`` has no setuid helper) and refuses to run as root ("Running as root
without --no-sandbox is not supported").

Decision (issue 43, low item): an ordinary user's Chromium runs sandboxed wherever user
namespaces work (checked once per process, :func:`sandbox_missing`); root, or a machine without
user namespaces, gets ``--no-sandbox``, and :func:`sandbox_state` says so in the web domain's
``describe()`` (``agentworld domains``), with the fix. Running the browser as root under an
unprivileged uid of its own was not chosen: Playwright's driver talks to the browser over
pipes it starts, the profile and downloads would need a directory that uid owns, and the local
apps' per-episode key travels in the browser's requests, which another uid's processes could
then read. Run the web domain as an ordinary user to get the sandbox; as root, the pages it
loads are the local apps only (``--host-resolver-rules`` and a route that aborts other
origins, :mod:`agentworld.domains.web.browser`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

NO_SANDBOX = "--no-sandbox"


@functools.cache
def sandbox_missing() -> str | None:
    """Why Chromium's sandbox cannot run here (root; no user namespaces), or ``None`` when it
    can (checked once per process by making a user namespace with ``unshare``)."""
    if os.geteuid() == 0:
        return "Chromium refuses its sandbox as root"
    unshare = shutil.which("unshare") or shutil.which("unshare", path="/usr/bin:/bin")
    if unshare is None:
        return "unshare (util-linux) is not installed to check for user namespaces"
    try:
        done = subprocess.run([unshare, "--user", "--map-root-user", "true"],
                              capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no user namespaces here ({exc})"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        return f"no user namespaces here ({said[-1] if said else f'exit {done.returncode}'})"
    return None


def sandbox_flags() -> list[str]:
    """Chromium's command-line flags for its sandbox: ``[]`` (sandboxed) where it can run,
    else ``["--no-sandbox"]``. Playwright adds ``--no-sandbox`` itself unless launched with
    ``chromium_sandbox=True`` (:class:`agentworld.domains.web.browser.Browser` passes
    ``not sandbox_flags()``)."""
    return [] if sandbox_missing() is None else [NO_SANDBOX]


def sandbox_state() -> str:
    """One line: whether the web domain's Chromium runs sandboxed here, and the fix if not."""
    missing = sandbox_missing()
    if missing is None:
        return "Chromium's own (renderers in namespaces of their own, seccomp)"
    fix = "run as an ordinary user" if os.geteuid() == 0 else \
        "sudo sysctl -w kernel.unprivileged_userns_clone=1 (needs root)"
    return f"none, --no-sandbox: {missing}; fix: {fix}"
