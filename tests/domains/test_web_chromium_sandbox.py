"""Chromium's own sandbox (issue 43, low item): an ordinary user's browser runs with it, root's
runs with ``--no-sandbox`` and the web domain says so.

Before: Chromium always ran with ``--no-sandbox``, so a page that exploited a renderer had the
user's files and network. Real Chromium, run as the local user with uid 1000
(tests/as_user.py): its renderers sit in user namespaces of their own.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from as_user import SKIP, run_as_user, user_dir

pytest.importorskip("playwright")
needs_chromium = pytest.mark.skipif(shutil.which("chromium") is None,
                                    reason="Debian's chromium is not installed")

RENDERERS = """
import json, os
from agentworld.domains.web.browser import Browser
from agentworld.domains.web.watchdog import renderer_pids
browser = Browser("MAP * ~NOTFOUND")
page = browser.browser.new_page()
page.set_content("<p id=x>sandboxed?</p>")
text = page.inner_text("#x")
mine = os.readlink("/proc/self/ns/user")
renderers = renderer_pids(browser.id)
own = [os.readlink(f"/proc/{pid}/ns/user") != mine for pid in renderers]
browser.close()
print(json.dumps({"text": text, "renderers": len(renderers), "own_userns": own}))
"""


@needs_chromium
@pytest.mark.skipif(SKIP is not None, reason=f"no ordinary user: {SKIP}")
def test_an_ordinary_users_chromium_runs_in_its_sandbox():
    """Every renderer of uid 1000's browser is in a user namespace of its own (before: the
    browser's, with ``--no-sandbox``)."""
    probe = run_as_user(["import subprocess, sys; sys.exit(subprocess.run(['unshare', '--user',"
                         " '--map-root-user', 'true']).returncode)"], user_dir(), timeout=30)
    if probe.returncode != 0:
        pytest.skip("no unprivileged user namespaces here")
    done = run_as_user([RENDERERS], user_dir(), timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["text"] == "sandboxed?" and out["renderers"] >= 1
    assert all(out["own_userns"]), out


@pytest.mark.skipif(os.geteuid() != 0, reason="root's browser")
def test_roots_chromium_has_no_sandbox_and_the_domain_says_so():
    from agentworld.core import plugins
    from agentworld.domains.web.chromium_sandbox import sandbox_flags

    assert sandbox_flags() == ["--no-sandbox"]
    facts = plugins.get_domain("web").describe()
    assert facts["browser sandbox"] == ("none, --no-sandbox: Chromium refuses its sandbox as "
                                        "root; fix: run as an ordinary user")
