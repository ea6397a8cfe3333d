"""The search domain through the framework: plugin registry, scorer, consistency, CLI, speed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from agentworld.core import plugins
from agentworld.core.collect import collect
from agentworld.core.types import Action, Observation
from agentworld.domains.search.domain import SearchDomain
from agentworld.domains.search.env import render_call

AGENTWORLD = str(Path(sys.executable).parent / "agentworld")


def test_the_real_domain_replaces_the_awb_stand_in():
    domain = plugins.get_domain("search")
    assert isinstance(domain, SearchDomain)
    assert plugins.owner("domain", "search") == "search"
    assert domain.has_environment


def test_scorer_on_result_lists_memory_and_pages():
    domain = SearchDomain()
    real = "\n\n".join(f"[{i}] https://a.example/{i}\nTitle: T{i}\nSnippet: s\nDate: N/A"
                       for i in (1, 2, 3, 4))
    swapped = real.replace("a.example/1", "X").replace("a.example/2", "a.example/1")
    swapped = swapped.replace("X", "a.example/2")
    assert domain.score(real, Observation(text=real)) == 1.0
    # same URLs and titles; ranks 3 and 4 agree: (1 + 1 + 2/4) / 3
    assert abs(domain.score(swapped, Observation(text=real)) - 2.5 / 3) < 1e-9
    assert domain.score("No results found for \"x\".", Observation(text=real)) == 0.0
    memory = '{\n  "a": 1,\n  "b": 2\n}'
    assert domain.score('{"a": 1, "b": 3}', Observation(text=memory)) == 0.5
    assert domain.score("not json", Observation(text=memory)) == 0.0
    page = "# Title\n\nline one\n\nline two"
    assert abs(domain.score("# title\nline  one\nline three", Observation(text=page)) - 2 / 3) < 1e-9


def test_action_types_families_and_consistency_turns():
    domain = SearchDomain()
    [episode] = collect(domain, 1, policies={"scripted": 1.0}, seed=1, workers=1)
    names = [domain.action_type(s.action) for s in episode.steps]
    assert names[0] == "web_search" and names[-1] == "answer"
    turns = domain.consistency_turns(episode)
    extracts = [i for i, n in enumerate(names) if n == "web_extractor"]
    recalls = [i for i, s in enumerate(episode.steps)
               if domain.command_families(s.action) >= {"dict_memory", "dict_memory:retrieve"}]
    assert extracts and recalls and set(extracts + recalls) <= set(turns)
    assert episode.steps[-1].observation.state["memory"]  # privileged state recorded
    assert domain.action_type(Action(text="hello")) == "invalid"
    assert domain.command_families(render_call("web_search", {"queries": ["a", "b"]})) == \
        {"web_search", "web_search:batch"}
    assert domain.verify("Answer submitted: x\nResult: correct", None) == (1.0, True)


def test_collection_speed():
    domain = SearchDomain()
    start = time.perf_counter()
    episodes = collect(domain, 40, policies={"scripted": 0.5, "random": 0.5}, seed=0, workers=1)
    elapsed = time.perf_counter() - start
    steps = sum(len(e.steps) for e in episodes)
    rate = steps / elapsed
    solved = [e.steps[-1].reward for e in episodes if e.metadata["policy"] == "scripted"]
    print(f"collected {len(episodes)} episodes, {steps} transitions in {elapsed:.2f} s: "
          f"{rate:.0f} transitions/s")
    assert solved and all(r == 1.0 for r in solved)
    assert rate > 50


def test_cli_collects_and_lists_the_domain_as_real(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "250"}
    env.pop("AGENTWORLD_CACHE", None)  # it would win over XDG_CACHE_HOME
    out = tmp_path / "eps.jsonl"
    start = time.perf_counter()
    run = subprocess.run([AGENTWORLD, "collect", "--domain", "search", "--episodes", "4",
                          "--out", str(out)], capture_output=True, text=True, env=env, timeout=120)
    print(f"agentworld collect (corpus built from scratch): {time.perf_counter() - start:.2f} s")
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4 and {r["domain"] for r in rows} == {"search"}
    assert list((tmp_path / "cache" / "agentworld" / "search").glob("corpus-v1-*.jsonl"))
    listed = subprocess.run([AGENTWORLD, "domains"], capture_output=True, text=True, env=env,
                            timeout=120)
    line = next(x for x in listed.stdout.splitlines() if x.startswith("│ search "))
    assert "│ yes " in line and "│ search " in line.split("│ yes ")[1]
