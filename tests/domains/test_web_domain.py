"""The web domain through the framework: plugin, actions, scorer, rationales, consistency,
collection with every policy (a real browser; one shared environment)."""

from __future__ import annotations

import json
import os

import pytest
from agentworld.core import plugins
from agentworld.core.collect import run_episode
from agentworld.core.llm_policy import LLMPolicy
from agentworld.core.types import Action, Observation
from agentworld.domains.web import axtree
from agentworld.domains.web.actions import ActionError, call, extract, parse
from agentworld.domains.web.domain import WebDomain
from agentworld.domains.web.policies import WEB_AGENT_PROMPT, parse_reply
from agentworld.domains.web.scorer import node_scores
from agentworld.domains.web.tasks import WebTaskSampler, available_kinds, make_task
from loopback import chat_route, serve

REAL = """URL: http://shop.test/cart
Focused element: none

RootWebArea 'Cart - Shop', focused
\t[1] navigation 'Shop'
\t\t[2] link 'Catalog'
\t\t[3] link 'Cart (1)'
\t[4] main ''
\t\t[5] heading 'Cart'"""


def test_the_real_domain_replaces_the_awb_stand_in():
    domain = plugins.get_domain("web")
    assert isinstance(domain, WebDomain) and plugins.owner("domain", "web") == "web"
    assert domain.has_environment and set(domain.policies()) == {"scripted", "random"}


def test_actions_parse_to_browsergym_calls_and_refuse_the_rest():
    assert parse("select_option('11', ['a', 'b'])").arguments == {"bid": "11", "options": ["a", "b"]}
    assert call("noop", wait_ms=0) == "noop(wait_ms=0)" and call("click", 7) == "click('7')"
    for bad, message in [("click(bid=1, x=2)", "click takes (bid, button)"),
                         ("scroll('down', 1)", "delta_x must be a number"),
                         ("goto(open('/etc/passwd'))", "arguments must be literals")]:
        with pytest.raises(ActionError, match=message.replace("(", r"\(").replace(")", r"\)")):
            parse(bad)
    assert extract("Let me open the cart.\n```\nclick('3')\n```") == "click('3')"
    assert parse_reply("DONE") is None and parse_reply("no idea") is None


def test_scorer_over_tree_nodes():
    domain = WebDomain()
    assert domain.score(REAL, Observation(text=REAL)) == 1.0
    wrong = REAL.replace("Cart (1)", "Cart (0)")
    scores = node_scores(wrong, REAL)  # 7 of 8 items agree
    assert scores["exact"] == 0.0 and abs(scores["f1"] - 7 / 8) < 1e-9
    shallow = REAL.replace("\t\t[5] heading", "\t[5] heading")  # depth is part of a node
    assert abs(node_scores(shallow, REAL)["f1"] - 7 / 8) < 1e-9
    half = "\n".join(REAL.splitlines()[:5])  # header + 2 nodes: precision 1, recall 4/8
    assert abs(domain.score(half, Observation(text=REAL)) - 2 * 0.5 / 1.5) < 1e-9
    assert domain.score("nothing like it", Observation(text=REAL)) == 0.0
    node = axtree.parse_node("\t\t[11] combobox 'Quantity', value='1', expanded='false', required")
    assert (node.depth, node.bid, node.role, node.name, node.props, node.flags) == (
        2, "11", "combobox", "Quantity", {"value": "1", "expanded": "false"}, frozenset({"required"}))


def test_tasks_are_seeded_and_cover_every_kind():
    tasks = WebTaskSampler().sample(12, seed=3)
    assert tasks == WebTaskSampler().sample(12, seed=3)
    assert {t.kind for t in tasks} == set(available_kinds())
    with pytest.raises(ValueError, match="unknown web task kind 'shop'; valid: shop_cart"):
        make_task("shop", 0)
    with pytest.raises(ValueError, match=r"unknown web task kinds \['x'\]; valid: shop_cart"):
        WebTaskSampler(("x",))
    domain = WebDomain()
    assert domain.action_type(Action(text="click [42]")) == "click"  # AgentWorldBench rows
    assert domain.command_families(Action(text="goto('https://example.com/')")) == {"goto", "goto:off-host"}
    assert domain.is_deterministic(Action(text="bogus")) and not domain.is_deterministic(Action(text="click('1')"))


@pytest.fixture(scope="module")
def env():
    if not any(os.path.exists(p) for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser")):
        pytest.skip("needs Debian's chromium (apt-get install chromium)")
    e = WebDomain().make_env(timeout_s=5)
    yield e
    e.close()


def test_expert_episode_rationales_and_consistency(env):
    domain = WebDomain()
    task = make_task("shop_checkout", 11)
    episode = run_episode(domain, env, task, domain.policies()["scripted"], seed=2, max_steps=12)
    assert episode.steps[-1].reward == 1.0 and episode.steps[-1].terminated
    previous, rationales = episode.initial_observation.state, []
    for step in episode.steps:
        rationales.append(domain.explain(step, previous))
        previous = step.observation.state
    product = task.check["product"]
    link = next(i for i, s in enumerate(episode.steps) if s.observation.text.startswith(
        "URL: http://shop.test/product/"))
    assert f"link {product!r}" in rationales[link]
    assert "navigates from http://shop.test/ to http://shop.test/product/" in rationales[link]
    assert f"order #1 is placed for {task.check['name']}" in rationales[-1]
    assert "the cart changes from" in rationales[-1]
    turns = domain.consistency_turns(episode)
    fills = [i for i, s in enumerate(episode.steps) if s.action.text.startswith("fill(")]
    assert fills and all(i in turns for i in fills[1:])  # later steps show the earlier fills
    assert len(turns) < len(episode.steps)


def test_random_and_llm_policies_run_real_episodes(env):
    domain = WebDomain()
    task = make_task("forum_reply", 4)
    episode = run_episode(domain, env, task, domain.policies()["random"], seed=5, max_steps=12)
    assert 4 <= len(episode.steps) <= 10
    for step in episode.steps:  # every malformed action got the env's error line
        if domain.action_type(step.action) == "invalid":
            assert "\nError: " in step.observation.text and step.observation.state["url"]

    def answer(request):  # an agent that opens the post of the task, reading the tree
        tree = request["messages"][-1]["content"]
        title = json.dumps(task.check["post"])[1:-1]
        line = next(x for x in tree.splitlines() if f"link '{title}'" in x)
        return f"I open the post.\nclick('{line.split('[')[1].split(']')[0]}')"

    with serve(chat_route(answer)) as (url, requests):
        policy = LLMPolicy(WEB_AGENT_PROMPT, parse_reply, base_url=f"{url}/v1", model="m",
                           max_steps=1)
        episode = run_episode(domain, env, task, policy, seed=0, max_steps=3)
    assert len(episode.steps) == 1 and len(requests) == 1
    assert episode.steps[0].observation.text.startswith("URL: http://forum.test/post/")
    assert f"heading {task.check['post']!r}" in episode.steps[0].observation.text
