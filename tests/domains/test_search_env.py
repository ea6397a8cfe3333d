"""The real search environment: tools, memory, tool errors, answers and the scripted expert."""

from __future__ import annotations

import json

import gymnasium
import pytest
from agentworld.core.types import Action
from agentworld.domains.search.env import SearchEnv, render_call
from agentworld.domains.search.policies import ScriptedExpert
from agentworld.domains.search.tasks import KINDS, SearchTaskSampler, is_correct

JSON_DUMPS = "https://docs.python.org/3/library/json.html#json.dumps"


@pytest.fixture
def env() -> SearchEnv:
    e = SearchEnv()
    e.reset(seed=0)
    return e


def call(env: SearchEnv, name: str, **arguments):
    return env.step(render_call(name, arguments))


def test_search_lists_results_in_the_public_format(env):
    obs, reward, terminated, truncated, info = call(env, "web_search",
                                                    query="Serialize obj to a JSON formatted str")
    assert obs.startswith(f"[1] {JSON_DUMPS}\nTitle: json.dumps\nSnippet: Serialize")
    assert "\nDate: N/A\n\n[2] " in obs
    assert (reward, terminated, truncated, info) == (0.0, False, False,
                                                     {"tool": "web_search", "error": False})
    assert env.privileged_state()["seen"][0] == JSON_DUMPS
    batch, *_ = call(env, "web_search", queries=["json dumps", "qqqzzzxx"], top_k=2)
    assert batch.startswith('## Results for "json dumps"\n\n[1] ')
    assert batch.endswith('## Results for "qqqzzzxx"\n\nNo results found for "qqqzzzxx".')


def test_extractor_returns_the_page_text(env):
    obs, *_ = call(env, "web_extractor", url=JSON_DUMPS)
    assert obs == env.engine.page(JSON_DUMPS).text
    assert obs.startswith("json.dumps\n\nSerialize ``obj`` to a JSON formatted ``str``.")
    company = env.tasks.world.companies[0]
    url = f"https://en.worldpedia.org/wiki/{company.name.replace(' ', '_')}"
    focused, *_ = call(env, "web_extractor", url=url, goal="founder")
    assert focused == (f"# {company.name}\n\n| {company.name} | |\n| --- | --- |\n"
                       f"| Founder | {company.founder} |")
    missing, *_ = call(env, "web_extractor", url="https://nowhere.example/x")
    assert missing == "Error: failed to fetch https://nowhere.example/x: page not found (HTTP 404)"
    assert env.privileged_state()["visited"] == [JSON_DUMPS, url]


def test_memory_round_trips(env):
    assert call(env, "dict_memory", operation="add", dict={"city": "Gesov", "year": 1955})[0] == \
        'Successfully added items of ["city", "year"] to memory.'
    got, *_ = call(env, "dict_memory", operation="retrieve", key_list=["city", "nope"])
    assert got == '{\n  "city": "Gesov"\n}\nKey not found: ["nope"]'
    assert call(env, "dict_memory", operation="update", dict={"year": 1956})[0] == \
        'Successfully updated items of ["year"] in memory.'
    assert json.loads(call(env, "dict_memory", operation="retrieve_all")[0]) == \
        {"city": "Gesov", "year": 1956}
    assert call(env, "dict_memory", operation="delete", key_list=["city"])[0] == \
        'Successfully removed items of ["city"] from memory.'
    assert env.privileged_state()["memory"] == {"year": 1956}
    assert call(env, "dict_memory", operation="remove_all")[0] == "Successfully cleared all memory."
    assert call(env, "dict_memory", operation="list")[0] == "Memory is empty."


@pytest.mark.parametrize("action, message", [
    (Action(text="search for cities"), "Error: the action is not a JSON tool call"),
    (Action(text='{"name": "browse", "arguments": {}}'), "Error: unknown tool 'browse'"),
    (Action(text='{"name": "web_search", "arguments": {"query": 3}}'),
     "Error: web_search: 'query' must be a string"),
    (Action(text='{"name": "web_search", "arguments": {"query": "x", "top_k": 99}}'),
     "Error: web_search: top_k must be an integer from 1 to 20"),
    (Action(text='{"name": "web_extractor", "arguments": {}}'),
     "Error: web_extractor: missing argument 'url'"),
    (Action(text='{"name": "dict_memory", "arguments": {"operation": "pop"}}'),
     "Error: dict_memory: unknown operation 'pop'"),
    (Action(text="x", name="dict_memory", arguments={"operation": "retrieve"}),
     'Error: dict_memory: retrieve needs "key_list"'),
    (Action(text='{"name": "answer", "arguments": {"answer": 5}}'),
     'Error: answer needs exactly one argument "answer"'),
    (Action(text='{"name": "web_search", "arguments": "not json"}'),
     'Error: "arguments" is a string that is not JSON'),
])
def test_malformed_calls_give_tool_errors(env, action, message):
    obs, reward, terminated, _, info = env.step(action)
    assert obs.startswith(message) and "\n" not in obs
    assert (reward, terminated, info["error"]) == (0.0, False, True)


def test_text_tool_calls_parse_fenced_and_tagged(env):
    fenced = render_call("dict_memory", {"operation": "set", "dict": {"k": "v"}}).text
    assert env.step(Action(text=fenced))[0].startswith("Successfully added")
    tagged = '<tool_call>{"name": "dict_memory", "arguments": {"operation": "get", "key_list": ["k"]}}</tool_call>'
    assert env.step(Action(text=tagged))[0] == '{\n  "k": "v"\n}'


def test_scripted_expert_solves_every_task_kind():
    env, expert = SearchEnv(), ScriptedExpert()
    tasks = SearchTaskSampler().sample(40, seed=7)
    assert {t.kind for t in tasks} == set(KINDS)
    for i, task in enumerate(tasks):
        expert.reset(i)
        history = [env.reset(options={"task": task})[0]]
        tools_used = []
        while (action := expert.act(task, history)) is not None:
            obs, reward, terminated, _, info = env.step(action)
            history += [action, obs]
            tools_used.append(info["tool"])
            assert not info["error"], obs
        assert (reward, terminated) == (1.0, True), (task.instruction, history[-1])
        assert history[-1].endswith("Result: correct")
        if task.kind != "docs_fact":
            assert {"web_search", "web_extractor", "dict_memory"} <= set(tools_used)


def test_a_wrong_answer_ends_with_zero_reward(env):
    obs, reward, terminated, *_ = call(env, "answer", answer="Atlantis")
    assert (obs.endswith("Result: incorrect"), reward, terminated) == (True, 0.0, True)
    with pytest.raises(RuntimeError, match="reset"):
        call(env, "answer", answer="again")


def test_answer_matching():
    check = {"answer": "Sushoul Labs", "aliases": []}
    assert is_correct("sushoul labs.", check) and is_correct("It is Sushoul Labs", check)
    assert not is_correct("Sushoul", check)


def test_gymnasium_make_runs_the_real_env():
    env = gymnasium.make("agentworld/search-v0")
    obs, info = env.reset(seed=3)
    assert obs.endswith("give the final answer with the answer tool.") and info["task"]
    obs, *_ = env.step(render_call("web_search", {"query": "json dumps"}))
    assert obs.startswith("[1] https://docs.python.org/3/library/json.html")
    env.close()


def test_extractor_pages_long_content_with_max_length_and_start_index(env):
    text = env.engine.page(JSON_DUMPS).text
    first, *_ = call(env, "web_extractor", url=JSON_DUMPS, max_length=100)
    assert first == (f"{text[:100]}\n\n[Content truncated: characters 0-100 of {len(text)} shown. "
                     "Call web_extractor with start_index 100 to read more.]")
    rest, *_ = call(env, "web_extractor", url=JSON_DUMPS, start_index=100)
    assert rest == text[100:]  # the default max_length (5,000) holds the rest
    past, *_ = call(env, "web_extractor", url=JSON_DUMPS, start_index=len(text))
    assert past == (f"Error: web_extractor: start_index {len(text)} is past the end of the "
                    f"content ({len(text)} characters); no more content available.")
    bad, *_ = call(env, "web_extractor", url=JSON_DUMPS, max_length=0)
    assert bad == "Error: web_extractor: max_length must be an integer from 1 to 100000, got 0"
    bad, *_ = call(env, "web_extractor", url=JSON_DUMPS, start_index="10")
    assert bad == "Error: web_extractor: start_index must be an integer >= 0, got '10'"
