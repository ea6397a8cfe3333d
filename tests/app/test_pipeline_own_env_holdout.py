"""[collect] ood_task_kinds on a user's own environment: the kinds are those of the domain its
env_options make (a site's `site_visit` / `site_submit`), not the built-in apps' task kinds: a
third-party site's `site_submit` was refused before any episode ran (issue 45 item 3). Real
Chromium on a static site served by the web domain."""

import json

from rich.console import Console

from agentworld.app.config import parse_config
from agentworld.app.pipeline import run_pipeline

PIPELINE = """
[run]
dir = "{dir}"
seed = 0
domain = "web"

[collect]
episodes = 4
policies = {{ scripted = 1.0 }}
max_steps = 4
workers = 1
ood_task_kinds = ["site_submit"]
env_options = {{ site = "{site}" }}
"""

INDEX = '<html><head><title>Home</title></head><body><a href="form.html">Sign up</a></body></html>'
FORM = ('<html><head><title>Sign up</title></head><body><form action="index.html">'
        '<label>Name <input name="name" required></label><button>Send</button></form></body></html>')


def _kinds(path):
    return sorted(json.loads(line)["task"]["kind"] for line in path.read_text().splitlines())


def test_ood_task_kinds_of_the_user_site(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(INDEX)
    (site / "form.html").write_text(FORM)
    cfg = parse_config(PIPELINE.format(dir=tmp_path / "run", site=site))
    run_pipeline(cfg, console=Console(quiet=True))
    episodes = tmp_path / "run/episodes"
    ood = _kinds(episodes / "ood.jsonl")
    inside = _kinds(episodes / "train.jsonl") + _kinds(episodes / "heldout.jsonl")
    assert ood and set(ood) == {"site_submit"}
    assert inside and set(inside) == {"site_visit"}
    assert len(ood) + len(inside) == 4
