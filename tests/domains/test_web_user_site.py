"""``agentworld collect --domain web --set url=`` / ``--set site=``: the user's own web site
(issue 45 item 2). The real CLI in a subprocess, real Chromium, a real HTTP server on loopback
(Python's ``http.server`` in its own process): episodes on the site's pages only, tasks from
its pages, forms filled with values its own validation accepts and submitted."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agentworld.domains.web.apps.server import KEY_HEADER

pytestmark = pytest.mark.skipif(
    not any(os.path.exists(p) for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser")),
    reason="needs Debian's chromium (apt-get install chromium; .ci/run installs it)")

FORM = """<form action="thanks.html" method="get">
<label for="n">Name</label><input id="n" name="name" required minlength="3">
<label for="e">Email</label><input id="e" name="email" type="email" required>
<label for="q">Quantity</label><input id="q" name="qty" type="number" min="2" max="5" step="1" required>
<label for="d">Day</label><input id="d" name="day" type="date" min="2030-01-01" max="2030-12-31" required>
<label for="c">Code</label><input id="c" name="code" pattern="[A-Z]{2}[0-9]{3}" required>
<label for="t">Topic</label><select id="t" name="topic" required><option value="">Choose</option>
<option value="sales">Sales</option><option value="help">Help</option></select>
<label><input type="checkbox" name="agree" required> I agree</label>
<button type="submit">Send message</button></form>"""
PAGES = {
    "index.html": ("Home", '<a href="about.html">About us</a> <a href="products/">Products</a> '
                           '<a href="contact.html">Contact</a> <a href="https://example.com/">Out</a>'),
    "about.html": ("About", '<a href="index.html">Home</a> <a href="team.html">Our team</a>'),
    "team.html": ("Team", '<a href="about.html">About us</a> <a href="contact.html">Write to us</a>'),
    "products/index.html": ("Products", '<a href="lamp.html">Desk lamp</a> '
                                        '<a href="chair.html">Chair</a> <a href="../">Home</a>'),
    "products/lamp.html": ("Desk lamp", '<a href="chair.html">Chair</a> <a href="/contact.html">Ask</a>'),
    "products/chair.html": ("Chair", '<a href="lamp.html">Desk lamp</a>'),
    "contact.html": ("Contact", '<a href="index.html">Home</a>' + FORM),
    "thanks.html": ("Thanks", '<p>We got it.</p><a href="index.html">Home</a>'),
}
SERVER = textwrap.dedent("""
    import functools, http.server, sys
    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, fmt, *args):
            keyed = 'KEYED' if self.headers.get(sys.argv[2]) else 'plain'
            sys.stderr.write(f"{keyed} {self.command} {self.path}\\n")
            sys.stderr.flush()
    handler = functools.partial(Handler, directory=sys.argv[1])
    http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[3])), handler).serve_forever()
""")


def make_site(root: Path) -> Path:
    for name, (title, body) in PAGES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<!doctype html><html><head><title>{title}</title></head><body>"
                        f"<h1>{title}</h1>{body}</body></html>")
    return root


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served(tmp_path):
    """``(url, log path)`` of the site served by ``http.server`` in its own process."""
    root, log, port = make_site(tmp_path / "site"), tmp_path / "server.log", free_port()
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-c", SERVER, str(root), KEY_HEADER, str(port)],
                                stderr=err)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/", log
    proc.terminate()
    proc.wait(timeout=5)


def collect(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).with_name("agentworld")), "collect", "--domain", "web", *args],
        capture_output=True, text=True, timeout=150, cwd=tmp_path)


def urls_of(episode: dict) -> list[str]:
    texts = [episode["initial_observation"]["text"]] + [s["observation"]["text"]
                                                      for s in episode["steps"]]
    return [t.split("\n", 1)[0].removeprefix("URL: ") for t in texts]


def test_collect_explores_the_users_app(tmp_path, served):
    url, log = served
    out = tmp_path / "eps.jsonl"
    run = collect(tmp_path, "--set", f"url={url}", "--episodes", "6", "--max-steps", "14",
                  "--out", str(out), "--seed", "3")
    assert run.returncode == 0, run.stderr
    eps = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(eps) == 6
    visited = {u for ep in eps for u in urls_of(ep)}
    pages = {urlsplit(u).path for u in visited}
    assert len(pages - {"/"}) >= 5, visited
    # nothing else was reachable (back past the first page is the tab's about:blank)
    assert all(u.startswith(url) for u in visited - {"about:blank"}), visited
    for ep in eps:
        assert ep["task"]["kind"] in ("site_visit", "site_submit")
        assert ep["task"]["setup"]["start_url"] == url
        assert "shop.test" not in ep["task"]["instruction"]
    # the site's pages name the tasks; the expert reaches every goal it is given
    titles = {title for title, _ in PAGES.values()}
    assert all(any(t in ep["task"]["instruction"] for t in titles) for ep in eps)
    expert = [ep for ep in eps if ep["metadata"]["policy"] == "scripted"]
    assert expert and all(ep["steps"][-1]["reward"] == 1.0 for ep in expert)
    # forms were submitted with values the browser's validation accepted: the server saw them
    requests = log.read_text().splitlines()
    submitted = [r for r in requests if "/thanks.html?" in r]
    assert submitted, requests
    query = submitted[0].split("?", 1)[1]
    assert "email=" in query and "%40example.com" in query and "agree=on" in query
    assert "topic=sales" in query or "topic=help" in query
    # the user's app never receives the built-in apps' episode key
    assert requests and all(r.startswith("plain ") for r in requests), requests


def test_a_served_folder_with_the_explorer(tmp_path):
    """``--set site=DIR``: the folder served on loopback as http://site.test/; the explorer
    alone follows links, fills the form, submits and goes back."""
    from agentworld.domains.web.domain import WebDomain
    from agentworld.domains.web.site_explorer import SiteExplorer
    from agentworld.domains.web.site_map import normalize

    root = make_site(tmp_path / "site")
    domain = WebDomain().for_environment({"site": str(root)})
    explorer = domain.policies()["explorer"]
    assert isinstance(explorer, SiteExplorer)
    env = domain.make_env(timeout_s=3)
    try:
        contact = next(t for t in domain.tasks().tasks if t.kind == "site_submit")
        assert contact.check["url"] == "http://site.test/contact.html"
        env.reset(options={"task": {**contact.model_dump(), "setup": {
            **contact.setup, "start_url": "http://site.test/contact.html"}}})
        explorer.reset(0)
        explorer.rng.random = lambda: 0.0  # always the form first
        history, actions = [env.step("noop(0)")[0]], []
        for _ in range(12):
            action = explorer.act(contact, history)
            if action is None:
                break
            actions.append(action.text)
            obs, reward, done, _, _ = env.step(action)
            history += [action, obs]
            if done:
                break
        assert reward == 1.0, actions
        assert env.tab.submitted_from == ["http://site.test/contact.html"]
        assert normalize(env.tab.page.url).startswith("http://site.test/thanks.html?"), actions
        assert actions[-1] == "click('17')" or actions[-1].startswith("click(")
        # another request of the loopback port without the episode's key is refused
        import httpx

        port = env.target.server.port
        assert httpx.get(f"http://127.0.0.1:{port}/index.html").status_code == 403
        assert httpx.get(f"http://127.0.0.1:{port}/index.html",
                         headers=env.target.headers()).status_code == 200
    finally:
        env.close()


@pytest.mark.parametrize("option, says", [
    ("url=http://127.0.0.1:{port}/", "does not answer"),
    ("url=ftp://127.0.0.1/", "is not an http://HOST[:PORT]/ URL"),
    ("site={tmp}/empty", "holds no .html file"),
    ("site={tmp}/missing", "is not a folder"),
])
def test_an_unusable_site_is_one_line_before_any_file(tmp_path, option, says):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no page here")
    out = tmp_path / "eps.jsonl"
    value = option.format(port=free_port(), tmp=tmp_path)
    run = collect(tmp_path, "--set", value, "--episodes", "2", "--out", str(out))
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and value.split("=", 1)[1] in lines[0], run.stderr
    assert not out.exists() and not Path(f"{out}.part").exists()


@pytest.fixture
def pydoc_server(tmp_path):
    """Python's own documentation server (``python3 -m pydoc -p``, Debian's python3): a real
    multi-page web application with Get and Search forms, in its own process."""
    port = free_port()
    proc = subprocess.Popen(["/usr/bin/python3", "-m", "pydoc", "-n", "127.0.0.1", "-p", str(port)],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=tmp_path)  # it stops at stdin's end
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/"
    proc.kill()
    proc.wait(timeout=5)


def test_a_real_web_application(tmp_path, pydoc_server):
    """The bar of issue 45: episodes on a real web application visit at least five distinct
    pages (pydoc's module pages), and its forms are submitted."""
    out = tmp_path / "eps.jsonl"
    run = collect(tmp_path, "--set", f"url={pydoc_server}", "--episodes", "4", "--policy",
                  "explorer=1", "--policy", "scripted=1", "--max-steps", "8", "--out", str(out),
                  "--seed", "1")
    assert run.returncode == 0, run.stderr
    eps = [json.loads(line) for line in out.read_text().splitlines()]
    visited = {u for ep in eps for u in urls_of(ep)}
    assert all(u.startswith(pydoc_server) for u in visited), visited
    pages = {urlsplit(u).path for u in visited}
    assert len(pages - {"/", "/get", "/search"}) >= 5, visited
    assert all(ep["task"]["instruction"].startswith(("Open the page titled \"Pydoc: ",
                                                     "Fill in and submit the form on"))
               for ep in eps)
    assert any(urlsplit(u).path in ("/get", "/search") and "key=" in u for u in visited), visited
    expert = [ep for ep in eps if ep["metadata"]["policy"] == "scripted"]
    assert expert and all(ep["steps"][-1]["reward"] == 1.0 for ep in expert)
