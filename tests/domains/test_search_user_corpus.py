"""``agentworld collect --domain search --set corpus=DIR``: the user's own documents (issue 45
item 2). The real CLI in a subprocess: episodes whose tasks are synthesised from the user's
documents, whose observations cite them by path, solved by the expert reading them; the index
cached by content; an unusable folder is one line before any file is written.

Before: ``corpus`` was an unknown option (the built-in corpus only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SKLEARN_DESCR = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" \
    / "site-packages" / "sklearn" / "datasets" / "descr"


def make_corpus(root: Path) -> Path:
    """Two Markdown documents (one links to an HTML one), an HTML one, a reStructuredText one."""
    (root / "sub").mkdir(parents=True)
    (root / "widgets.md").write_text(
        "# Orbital Widgets\n\nThe orbital widget spins at 4200 revolutions per minute when "
        "fully charged.\n\nSee [the calibration guide](sub/calib.html) for details.\n\n"
        "## Storage\n\nKeep widgets below 35 degrees in a dry cupboard.\n")
    (root / "sub" / "calib.html").write_text(
        "<html><head><title>Calibration Guide</title><script>stealCookies()</script></head>"
        "<body><h1>Calibration</h1><p>Each calibration run takes 17 minutes on the reference "
        "bench.</p><h2>Tools</h2><p>Use a torque driver rated to 12 newton metres.</p>"
        "</body></html>")
    (root / "notes.rst").write_text(
        "Release Notes\n=============\n\nVersion three of the flux capacitor ships with 88 new "
        "presets for time travel.\n\nKnown issues\n------------\n\nThe display flickers at 59 "
        "frames per second on older panels.\n")
    (root / "faq.md").write_text(
        "# Frequently Asked\n\nThe warranty of every widget lasts 24 months from delivery.\n\n"
        "Read [release notes](notes.rst) first.\n")
    (root / ".hidden.md").write_text("# Secret\n\nNothing here is indexed 99 times over.\n")
    return root


def collect(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "AGENTWORLD_CACHE": str(tmp_path / "cache")}
    return subprocess.run(
        [str(Path(sys.executable).with_name("agentworld")), "collect", "--domain", "search",
         *args],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)


def episodes(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_collect_cites_the_users_documents(tmp_path):
    corpus = make_corpus(tmp_path / "docs")
    out = tmp_path / "eps.jsonl"
    run = collect(tmp_path, "--set", f"corpus={corpus}", "--episodes", "9", "--out", str(out),
                  "--policy", "scripted=2", "--policy", "random=1")
    assert run.returncode == 0, run.stderr
    eps = episodes(out)
    assert len(eps) == 9
    ids = {"widgets.md", "sub/calib.html", "notes.rst", "faq.md"}
    titles = {"Orbital Widgets", "Calibration Guide", "Release Notes", "Frequently Asked"}
    kinds = set()
    for ep in eps:
        task = ep["task"]
        kinds.add(task["kind"])
        assert task["setup"]["corpus"], task
        assert all(hop["doc"] in ids for hop in task["setup"]["hops"])
        texts = [s["observation"]["text"] for s in ep["steps"]]
        if ep["metadata"]["policy"] == "scripted":
            # the expert reads every fact off the user's documents and answers right
            assert ep["steps"][-1]["reward"] == 1.0, (task, texts)
            cited = {doc for doc in ids for t in texts if t.startswith(f"[1] {doc}\n")
                     or f"\n[2] {doc}\n" in t}
            assert cited, texts
            assert any(title in t for t in texts for title in titles)
        assert not any("stealCookies" in t or "Secret" in t for t in texts)
    assert {"lookup", "two_hop", "compare"} <= kinds
    # the random policy opens the user's pages, never the built-in corpus's wiki
    opened = [s["action"]["text"] for e in eps if e["metadata"]["policy"] == "random"
              for s in e["steps"] if '"web_extractor"' in s["action"]["text"]]
    assert not any("worldpedia" in a for a in opened), opened
    assert any(f'"url": "{doc}"' in a for a in opened for doc in ids), opened
    two_hop = next(e for e in eps if e["task"]["kind"] == "two_hop")
    assert two_hop["task"]["check"]["answer"] in {"17", "12", "88", "59"}
    # the HTML page reached the agent as Markdown, its script dropped
    extracted = [s["observation"]["text"] for e in eps for s in e["steps"]
                 if '"url": "sub/calib.html"' in s["action"]["text"]
                 and '"goal"' not in s["action"]["text"]]
    assert extracted and all("# Calibration" in t and "17 minutes" in t for t in extracted)
    # the pages and their BM25 index are cached by content, once
    cache = tmp_path / "cache" / "search"
    assert len(list(cache.glob("user-*.jsonl"))) == 1
    assert len(list(cache.glob("user-*-bm25s*.index"))) == 1


def test_a_real_docs_tree(tmp_path):
    """scikit-learn's dataset descriptions (reStructuredText, in the venv): the expert answers
    questions about their numbers from the extracted documents."""
    assert SKLEARN_DESCR.is_dir(), SKLEARN_DESCR
    out = tmp_path / "eps.jsonl"
    run = collect(tmp_path, "--set", f"corpus={SKLEARN_DESCR}", "--episodes", "6", "--out",
                  str(out), "--policy", "scripted=1", "--seed", "5")
    assert run.returncode == 0, run.stderr
    eps = episodes(out)
    rsts = {p.name for p in SKLEARN_DESCR.glob("*.rst")}
    for ep in eps:
        assert all(hop["doc"] in rsts for hop in ep["task"]["setup"]["hops"])
        assert any(f'"url": "{hop["doc"]}"' in s["action"]["text"]
                   for s in ep["steps"] for hop in ep["task"]["setup"]["hops"])
    assert sum(ep["steps"][-1]["reward"] for ep in eps) >= 5


@pytest.mark.parametrize("make, says", [
    (lambda d: (d.mkdir(), (d / "photo.png").write_bytes(b"\x89PNG")), "holds no document"),
    (lambda d: None, "is not a folder"),
    (lambda d: (d.mkdir(), (d / "hello.txt").write_text("hello world\n")),
     "gives no question: no sentence with one number, no section heading and no link"),
])
def test_an_unusable_corpus_is_one_line_before_any_file(tmp_path, make, says):
    corpus = tmp_path / "docs"
    make(corpus)
    out = tmp_path / "eps.jsonl"
    run = collect(tmp_path, "--set", f"corpus={corpus}", "--episodes", "2", "--out", str(out))
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and str(corpus) in lines[0], run.stderr
    assert not out.exists() and not Path(f"{out}.part").exists()
    if says.startswith("holds no") or says.startswith("is not"):
        assert not (tmp_path / "cache" / "search").exists()
