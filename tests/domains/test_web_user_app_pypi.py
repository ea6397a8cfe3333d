"""``--set url=`` on a real web application from PyPI that nobody here wrote: sqlite-web (a
SQLite admin UI, one command, offline) in its own virtual environment over a scratch database.

Every page of it repeats a navigation-bar form ("new table name", Create); its table pages
list one "Drop" link per column beside the table's own "Drop" tab. The old explorer made a
"submit the form" task of every page (the navigation bar's form), its scripted policy took the
tab for a column's "Drop" and went back and forth for 40 steps, and the random policy's
``goto`` went to the built-in shop (``http://shop.test/cart``)."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import time
from urllib.parse import urlsplit

import pytest
from agentworld.core.episode_runner import run_episode
from agentworld.domains.web.domain import SiteDomain
from agentworld.domains.web.site_map import Form, FormField, Page, own_forms
from agentworld.domains.web.site_target import SiteTarget
from agentworld.domains.web.site_tasks import SiteTaskSampler

UV = os.environ.get("UV") or shutil.which("uv")
CHROMIUM = any(os.path.exists(p) for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser"))


@pytest.fixture(scope="module")
def sqlite_web(tmp_path_factory):
    """The URL of sqlite-web on a scratch copy of a three-table database (skipped when it
    cannot be installed: the registry is unreachable and the uv cache lacks it)."""
    if UV is None:
        pytest.skip("needs the uv executable")
    base = tmp_path_factory.mktemp("sqlite-web")
    venv = base / "venv"
    try:
        subprocess.run([UV, "venv", "-q", str(venv)], check=True, capture_output=True, timeout=120)
        subprocess.run([UV, "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                        "sqlite-web"], check=True, capture_output=True, timeout=300)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"sqlite-web could not be installed from the registry: {exc}")
    db = sqlite3.connect(base / "shop.db")
    db.executescript("""
        CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);
        CREATE TABLE product(id INTEGER PRIMARY KEY, title TEXT, price REAL);
        CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER, qty INTEGER);
        INSERT INTO customer(name, city) VALUES ('Ada', 'Lyon'), ('Bob', 'Oslo');
        INSERT INTO product(title, price) VALUES ('Pen', 1.5), ('Stapler', 9.9);
        INSERT INTO orders(customer_id, qty) VALUES (1, 3), (2, 10);""")
    db.commit()
    db.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(venv / "bin" / "sqlite_web"), "-x", "-q", "-H", "127.0.0.1",
                             "-p", str(port), str(base / "shop.db")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    yield f"http://127.0.0.1:{port}/"
    proc.kill()
    proc.wait(timeout=5)


def test_only_a_pages_own_forms_make_submit_tasks(sqlite_web):
    domain = SiteDomain(url=sqlite_web)
    target = SiteTarget(sqlite_web)
    try:
        pages = target.pages()
    finally:
        target.close()
    assert len({urlsplit(p.url).path for p in pages}) >= 5
    tasks = domain.tasks().tasks
    submits = [t for t in tasks if t.kind == "site_submit"]
    by_url = {p.url: p for p in pages}
    assert submits and all(own_forms(by_url[t.check["url"]], pages) for t in submits)
    # the navigation bar's "new table" form: a task of the first page that has it, only
    navbar = [t for t in submits if not any(
        urlsplit(f.action).path != "/create-table/" for f in by_url[t.check["url"]].forms)]
    assert len(navbar) <= 1, [t.check["url"] for t in navbar]
    assert len(submits) < len([p for p in pages if p.forms]), "every page got a submit task"
    urls = domain.policies()["random"].urls
    assert all(u.startswith(sqlite_web) for u in urls[:-1]) and "shop.test" not in " ".join(urls)


@pytest.mark.skipif(not CHROMIUM, reason="needs Debian's chromium (apt-get install chromium)")
def test_scripted_submits_a_column_drop_form_it_is_asked_for(sqlite_web):
    domain = SiteDomain(url=sqlite_web)
    tasks = [t for t in domain.tasks().tasks
             if t.kind == "site_submit" and "/drop-column/?name=" in t.check["url"]
             and urlsplit(t.check["url"]).path.startswith("/customer/")]
    assert tasks, "no column-drop page was mapped"
    env = domain.make_env()
    try:
        episode = run_episode(domain, env, tasks[0], domain.policies()["scripted"], seed=0,
                              max_steps=12)
    finally:
        env.close()
    actions = [s.action.text for s in episode.steps]
    assert episode.steps[-1].reward == 1.0, actions
    assert len(actions) <= 6, actions  # straight there: the table, its column's "Drop", submit


def test_a_site_with_one_form_does_not_make_half_the_tasks_submit_it():
    form = Form(action="http://s.test/search", method="get",
                fields=[FormField("input", "text", {"name": "q"})], submit="Go")
    pages = [Page(url=f"http://s.test/p{i}.html", title=f"P{i}") for i in range(6)]
    pages[0].forms.append(form)
    tasks = SiteTaskSampler(pages, "http://s.test/p0.html").sample(10, seed=1)
    kinds = [t.kind for t in tasks]
    assert kinds.count("site_submit") == 2, kinds  # once per round of the 5 visits
    visits = [t.check["url"] for t in tasks if t.kind == "site_visit"]
    assert sorted(visits[:5]) == [p.url for p in pages[1:]], visits  # each page once a round
