"""The real web environment: a headless Chromium (Playwright) on the local apps.

One environment (one browser) is shared by the module's tests; each test resets it, which
opens a fresh browser context. Process tests start their own Python process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from agentworld.domains.web.env import WebEnv, parse_observation
from agentworld.domains.web.policies import ScriptedExpert
from agentworld.domains.web.apps.miniwob import html_dir
from agentworld.domains.web.tasks import KINDS, available_kinds, is_done, make_task
from loopback import accepting, serve_cli
from web_procs import TAG_VAR, tagged

pytestmark = pytest.mark.skipif(
    not any(os.path.exists(p) for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser")),
    reason="needs Debian's chromium (apt-get install chromium; .ci/run installs it)")


@pytest.fixture(scope="module")
def env():
    e = WebEnv(timeout_s=3)
    yield e
    e.close()


def test_reset_gives_the_tree_with_bids_in_a_fresh_context(env):
    obs, info = env.reset(options={"task": make_task("shop_cart", 7)})
    fields, tree = parse_observation(obs)
    assert fields == {"URL": "http://shop.test/", "Focused element": "none"}
    lines = tree.splitlines()
    assert lines[0] == "RootWebArea 'Catalog - Shop', focused"
    assert lines[1:4] == ["\t[1] navigation 'Shop'", "\t\t[2] link 'Catalog'", "\t\t[3] link 'Cart (0)'"]
    first = env.tab.context
    env.reset(options={"task": make_task("todo_add", 7)})
    assert env.tab.context is not first and env.browser.browser.contexts == [env.tab.context]
    assert env.step("click('3')")[0].startswith("URL: http://todo.test/new\n")


def test_the_expert_solves_one_task_of_every_kind(env):
    assert html_dir() is not None, "the dev group installs agentworld-domain-web[miniwob]"
    assert len(available_kinds()) == len(KINDS) + 4
    for i, kind in enumerate(available_kinds()):
        task = make_task(kind, 100 + i)
        expert = ScriptedExpert(i)
        expert.reset(i)
        obs, _ = env.reset(options={"task": task})
        history, reward = [obs], 0.0
        for _ in range(12):
            action = expert.act(task, history)
            assert action is not None, (kind, history[-1])
            obs, reward, terminated, _, info = env.step(action)
            assert not info["error"], obs
            history += [action, obs]
            if terminated:
                break
        assert reward == 1.0, kind
        if kind in KINDS:
            assert is_done(env.server.world, task.check), kind
        else:  # the MiniWoB++ page's own verdict, read back
            assert env.tab.page.evaluate("() => [WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL]") == [True, 1]


def test_a_miniwob_page_is_seeded_and_a_wrong_answer_ends_it_unrewarded(env):
    obs, _ = env.reset(options={"task": make_task("miniwob_click_button", 3)})
    again, _ = env.reset(options={"task": make_task("miniwob_click_button", 3)})
    assert obs == again and obs.startswith("URL: http://miniwob.test/miniwob/click-button.html\n")
    _, tree = parse_observation(obs)
    assert tree.splitlines()[1] == "\tStaticText 'Click on the \"no\" button.'"
    assert "Time left" not in tree  # the wall-clock countdown is hidden
    wrong = next(line for line in tree.splitlines() if "button 'Okay'" in line).split("]")[0][2:]
    _, reward, terminated, *_ = env.step(f"click('{wrong}')")
    assert (reward, terminated) == (0.0, True)


def test_fill_select_and_server_validation(env):
    env.reset(options={"task": make_task("todo_add", 3)})
    obs = env.step("click('3')")[0]  # Add task
    _, tree = parse_observation(obs)
    assert "\t\t\t\t[8] textbox 'Title'\n" in tree and "[10] textbox 'Due date'" in tree
    assert parse_observation(env.step("fill('8', 'Plan the picnic')")[0])[0]["Focused element"] == "[8]"
    env.step("fill('10', '5 March 2027')")
    obs = env.step("select_option('12', 'high')")[0]
    assert "[8] textbox 'Title', value='Plan the picnic'\n" in obs
    assert "[12] combobox 'Priority', value='high', expanded='false'" in obs
    assert "[16] option 'high', selected='true'" not in obs  # bids kept while the page lives
    assert "[15] option 'high', selected='true'" in obs
    obs, reward, *_ = env.step("click('16')")  # Save task: rejected by the server
    assert "\t\t[6] alert ''\n\t\t\tStaticText 'Due date must be a date YYYY-MM-DD between 2026 " \
           "and 2030'\n" in obs
    assert "[11] textbox 'Due date', value='5 March 2027'" in obs
    assert reward == 0.0 and len(env.server.world.items) == 4


def test_malformed_actions_get_the_env_error_text(env):
    env.reset(options={"task": make_task("forum_reply", 1)})
    cases = {
        "click": "malformed action 'click': expected one call such as click('12'); valid "
                 "actions: click, fill, select_option, press, scroll, goto, go_back, go_forward, noop",
        "type('3', 'a')": "unknown action 'type'; valid actions: click, fill, select_option, "
                          "press, scroll, goto, go_back, go_forward, noop",
        "fill('3')": "fill is missing value; it takes (bid, value)",
        "click('999')": "no element with bid '999' on this page",
        "__import__('os').system('id')": "malformed action \"__import__('os').system('id')\": "
                                         "expected one call such as click('12'); valid actions: "
                                         "click, fill, select_option, press, scroll, goto, "
                                         "go_back, go_forward, noop",
    }
    for action, error in cases.items():
        obs, reward, terminated, _, info = env.step(action)
        fields, _ = parse_observation(obs)
        assert fields["Error"] == error and info["error"] and not terminated
        assert fields["URL"] == "http://forum.test/"


def test_off_host_navigation_is_blocked_with_a_clear_observation(env):
    env.reset(options={"task": make_task("shop_cart", 2)})
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        port = server.getsockname()[1]
        with accepting(server, timeout_s=1.0) as accepted:
            obs = env.step(f"goto('http://127.0.0.1:{port}/')")[0]
            assert parse_observation(obs)[0]["Error"] == (
                f"navigation to 'http://127.0.0.1:{port}/' blocked: only http://shop.test/, "
                "http://forum.test/, http://todo.test/, http://miniwob.test/ are reachable")
            env.tab.page.evaluate(  # a link on the page to another host, clicked
                "p => { const a = document.createElement('a'); a.href = `http://127.0.0.1:${p}/x`;"
                " a.textContent = 'Elsewhere'; document.querySelector('main').append(a); }", port)
            tree = parse_observation(env.step("noop(0)")[0])[1]
            bid = next(line for line in tree.splitlines() if "Elsewhere" in line).split("]")[0].split("[")[1]
            obs = env.step(f"click('{bid}')")[0]
            time.sleep(0.3)
        assert accepted == []  # nothing reached the other server
    fields, tree = parse_observation(obs)
    assert fields["Error"].startswith(f"navigation to 'http://127.0.0.1:{port}/x' blocked: it is "
                                      "off-host") and fields["URL"] == "http://shop.test/"
    assert "RootWebArea 'Catalog - Shop'" in tree


def test_a_hung_page_and_a_crashed_renderer_are_contained(env):
    env.reset(options={"task": make_task("shop_cart", 4)})
    env.tab.page.evaluate("() => { setTimeout(() => { while (true) {} }, 10); }")
    start = time.monotonic()
    obs, reward, terminated, _, info = env.step("click('3')")
    assert time.monotonic() - start < 15
    fields, tree = parse_observation(obs)
    assert fields["Error"].startswith("the page stopped responding (no answer within 3 s)")
    assert fields["URL"] == "http://shop.test/" and "[3] link 'Cart (0)'" in tree
    with pytest.raises(Exception, match="ERR_ABORTED|crash"):  # noqa: PT011 - Playwright's Error
        env.tab.page.goto("chrome://crash", timeout=3000)
    fields, tree = parse_observation(env.step("click('3')")[0])
    assert fields["Error"] == "the page crashed; its tab was replaced by a new one at http://shop.test/"
    assert "[3] link 'Cart (0)'" in tree
    assert env.step("click('3')")[0].startswith("URL: http://shop.test/cart\n")  # works again


def test_a_page_that_hangs_under_a_pending_poll_is_killed_by_the_watchdog(env):
    """Playwright times the poll out, then awaits its poller's abort in the page, which a
    page in an endless loop never answers (the call used to hang for good): the watchdog kills
    the renderer, the call fails, and the next step reports the hang and recovers."""
    from playwright.sync_api import Error

    env.reset(options={"task": make_task("shop_cart", 4)})
    tab = env.tab
    tab.page.evaluate("() => { setTimeout(() => { while (true) {} }, 300); }")
    start = time.monotonic()
    with pytest.raises(Error), tab.guard():  # the loop starts once the poller is installed
        tab.page.wait_for_function("() => false", timeout=tab.timeout_ms, polling=50)
    assert tab.hung and time.monotonic() - start < tab.timeout_ms / 1000 + tab.GRACE_S + 3
    fields, tree = parse_observation(env.step("click('3')")[0])
    assert fields["Error"].startswith("the page stopped responding (no answer within 3 s)")
    assert not tab.hung and "[3] link 'Cart (0)'" in tree
    assert env.step("click('3')")[0].startswith("URL: http://shop.test/cart\n")


def _python(code: str, tag: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], env={**os.environ, TAG_VAR: tag},
                            stdout=subprocess.PIPE, text=True)


def _gone(tag: str, timeout_s: float = 10.0) -> list:
    deadline = time.monotonic() + timeout_s
    while (left := tagged(tag)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_no_browser_process_survives_close_or_a_sigkill_of_the_collector():
    tag = uuid.uuid4().hex
    code = ("import os, sys, gymnasium, agentworld.domains.web; sys.path.insert(0, %r)\n"
            "from web_procs import tagged\n"
            "e = gymnasium.make('agentworld/web-v0').unwrapped; e.reset(seed=0); e.step('click(\"2\")')\n"
            "print(len(tagged(%r, os.getpid())), flush=True); e.close()\n"
            "print(len(tagged(%r, os.getpid())), flush=True)\n"
            "e.reset(seed=1); print('again', flush=True); import time; time.sleep(120)\n")
    here = str(Path(__file__).parent)
    process = _python(code % (here, tag, tag), tag)
    try:
        running, after_close = int(process.stdout.readline()), process.stdout.readline()
        assert running >= 3  # driver, browser, renderer(s)
        assert int(after_close) == 0  # close() left nothing
        assert process.stdout.readline().strip() == "again" and len(tagged(tag)) >= 3
        process.kill()  # SIGKILL: no handler runs in the collector
        process.wait()
        assert _gone(tag) == []
    finally:
        process.kill()


def test_sigterm_of_a_real_server_leaves_no_browser(tmp_path):
    pytest.importorskip("openenv")
    tag = uuid.uuid4().hex
    with serve_cli(["--domain", "web", "--real", "--no-token"], tmp_path / "server.log",
                   {**os.environ, TAG_VAR: tag}) as (url, process):
        session = httpx.post(f"{url}/sessions", json={}, timeout=60).json()["session_id"]
        reset = httpx.post(f"{url}/reset", json={"session_id": session}, timeout=60)
        assert reset.status_code == 200
        assert reset.json()["observation"]["text"].startswith("URL: http://")
        assert len(tagged(tag)) >= 4  # the server, the driver, the browser, a renderer: a
        # session's env lives until the session ends (here: with the server)
    assert process.returncode == 143
    assert _gone(tag) == []
