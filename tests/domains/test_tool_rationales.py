"""SFT rationales of the tool domains (mcp, search, swe) on real episodes: one per step, the
same from the recorded state as from text alone (what a simulator has), and through
``agentworld convert --to messages --reasoning``."""

from __future__ import annotations

import json

import pytest
from agentworld.app.cli import app
from agentworld.core.collect import collect
from agentworld.core.formats import THINK_CLOSE, THINK_OPEN
from agentworld.core.io import write_episodes
from agentworld.core.rationales import domain_rationales, step_history
from agentworld.domains.mcp.domain import McpDomain
from agentworld.domains.search.domain import SearchDomain
from agentworld.domains.swe.domain import SweDomain
from typer.testing import CliRunner

CASES = [(McpDomain, 8), (SearchDomain, 8), (SweDomain, 2)]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: c[0].name)
def collected(request):
    factory, n = request.param
    domain = factory()
    episodes = collect(domain, n, policies={"scripted": 0.5, "random": 0.5}, seed=5,
                       max_steps=10, workers=1)
    return domain, episodes


def test_every_step_has_a_rationale_equal_to_the_text_only_one(collected):
    domain, episodes = collected
    rationales = domain_rationales(episodes)  # raises on an empty one
    for episode, rows in zip(episodes, rationales):
        before = [episode.initial_observation, *(s.observation for s in episode.steps)]
        for t, (step, why) in enumerate(zip(episode.steps, rows)):
            assert why == domain.explain_text(step.action.text, before[t].text,
                                              step_history(episode, t)), (t, step.action.text)
            first = why.splitlines()[0]
            assert first.startswith(("call ", "malformed call: "))
            assert step.observation.text not in why or len(step.observation.text) < 8
    lines = [line for rows in rationales for why in rows for line in why.splitlines()]
    assert any(line.startswith("check: arguments match the schema of ") for line in lines)
    assert any(line.startswith("reads: turn ") for line in lines)


def test_mcp_rationale_checks_the_call_against_the_listed_tools():
    domain = McpDomain()
    listing = domain.initial_observation(None)  # the notes server's real tools
    history = [('{"name": "create_note", "arguments": {"title": "Rome", "body": "x"}}', listing)]
    text = domain.explain_text('{"name": "read_note", "arguments": {"title": 3}}',
                               '{"title": "Rome"}', history)
    assert text.splitlines()[1] == "check: argument title should be string, got integer"
    text = domain.explain_text('{"name": "get_weather", "arguments": {}}', listing)
    assert text.splitlines()[1].startswith("check: unknown tool get_weather; tools: create_note,")


def test_convert_to_messages_with_reasoning(collected, tmp_path):
    domain, episodes = collected
    source, target = tmp_path / "e.jsonl", tmp_path / "m.jsonl"
    write_episodes(str(source), episodes[:2])
    result = CliRunner().invoke(app, ["convert", str(source), str(target), "--to", "messages",
                                      "--reasoning"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(rows) == sum(len(e.steps) for e in episodes[:2])
    answer = rows[0]["messages"][-1]["content"]
    assert answer.startswith(THINK_OPEN) and THINK_CLOSE in answer
    assert answer.split(THINK_CLOSE)[0].removeprefix(THINK_OPEN).strip() == \
        domain_rationales(episodes[:1])[0][0]
