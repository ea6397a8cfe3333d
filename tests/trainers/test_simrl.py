"""Decoupled RL's reward sources and its control on the real mcp servers (issue 34).

The simulated environments are real :class:`~agentworld.sim.SimEnv` over two world models
written here: an oracle that answers every call from a real ``McpEnv`` (its observation and
reward footer are the real ones), and a flatterer that reports every call a success with
footer reward 1 (what an agent exploiting a simulator finds). The replay runs the real
servers."""

from __future__ import annotations

import json

import pytest
from agentworld.core import plugins, protocols
from agentworld.core.domain_base import DomainBase, domain_hooks
from agentworld.core.formats import wrap_observation
from agentworld.core.types import Prediction, Task
from agentworld.domains.mcp.calls import parse_call, render_call
from agentworld.domains.mcp.tasks import McpTaskSampler
from agentworld.sim import SimEnv
from agentworld.trainers.agents.simrl.evaluate import gap_report
from agentworld.trainers.agents.simrl.replay import agreement, replay, replay_many
from agentworld.trainers.agents.simrl.rewards import RewardedSimEnv, SimEpisode, combine


@pytest.fixture(scope="module")
def mcp():
    return plugins.get_domain("mcp")


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    """A lookup and a create task on the notes server."""
    return McpTaskSampler(kinds=("lookup", "create"), servers=("notes",)).sample(2, seed=1)


def solve(task: Task) -> str:
    """The one correct call of a notes lookup or create task."""
    p = task.setup["params"]
    if task.kind == "lookup":
        return render_call("read_note", {"title": p["title"]})
    return render_call("create_note", {"title": p["title"], "body": p["body"], "tags": p["tags"]})


class RealOracle:
    """A world model that answers from a real ``McpEnv`` (reset to ``task``): the real
    response and the real reward as the footer."""

    rewards = True
    history_window = None

    def __init__(self, env, task: Task):
        self.env, self.task = env, task

    def predict(self, requests, **_):
        out = []
        for messages in requests:
            if len(messages) == 2:  # a new episode: a fresh real one
                self.env.reset(options={"task": self.task})
            obs, reward, terminated, _, _ = self.env.step(messages[-1]["content"])
            text = wrap_observation(obs.text, reward=reward, terminated=terminated)
            out.append(Prediction(text=text, observation=obs.text, reward=reward, terminated=terminated))
        return out


class Flatterer:
    """A world model that reports every call a success: the call's arguments as the result,
    footer reward 1, terminated."""

    rewards = True
    history_window = None

    def predict(self, requests, **_):
        out = []
        for messages in requests:
            parsed = parse_call(messages[-1]["content"])
            body = json.dumps({"ok": parsed[1] if not isinstance(parsed, str) else {}})
            text = wrap_observation(body, reward=1.0, terminated=True)
            out.append(Prediction(text=text, observation=body, reward=1.0, terminated=True))
        return out


def sim_episode(world_model, mcp, task: Task, actions: list[str], source: str) -> tuple[list, SimEpisode]:
    finished: list[SimEpisode] = []
    env = RewardedSimEnv(SimEnv(world_model, domain=mcp, reward_source="none", max_steps=3),
                         mcp, source, on_episode=finished.append)
    env.reset(options={"task": task})
    steps = []
    for action in actions:
        steps.append(env.step(action))
        if steps[-1][2] or steps[-1][3]:
            break
    env.close()
    assert len(finished) == 1
    return steps, finished[0]


def test_capability_transcript_rewarding_domain(mcp, tasks) -> None:
    lookup, create = tasks
    assert isinstance(mcp, protocols.TranscriptRewardingDomain)
    web = plugins.get_domain("web")  # a DomainBase domain that does not override it
    assert isinstance(web, DomainBase) and isinstance(web, protocols.TranscriptRewardingDomain)
    assert web.verify_transcript(lookup, [("x", "y")]) is None  # the default: unknown
    p = create.setup["params"]
    good = solve(create)
    assert mcp.verify_transcript(create, [(good, '{"created": {}}')]) == (1.0, True)
    # the world model says the call failed: no note was made
    assert mcp.verify_transcript(create, [(good, "Error executing tool create_note: x")]) == (0.0, False)
    wrong = good.replace(p["body"], "other words")
    assert mcp.verify_transcript(create, [(wrong, '{"created": {}}')]) == (0.0, False)
    # the fields may also come from the (simulated) response
    listed = render_call("list_notes", {})
    shown = json.dumps({"notes": [{"title": p["title"], "body": p["body"], "tags": p["tags"]}]})
    assert mcp.verify_transcript(create, [(listed, shown)]) == (1.0, True)
    body = lookup.setup["params"]["title"], lookup.check["all"][0]["answer"]
    read = solve(lookup)
    assert mcp.verify_transcript(lookup, [(read, json.dumps({"title": body[0], "body": body[1]}))]) == (1.0, True)
    assert mcp.verify_transcript(lookup, [(read, json.dumps({"body": "seven"}))]) == (0.0, False)
    assert mcp.verify_transcript(lookup, []) == (0.0, False)
    # calls the real server refuses count as errors whatever the simulator answered: an
    # argument the schema lacks, an unknown tool, a wrong type
    right_body = json.dumps({"title": body[0], "body": body[1]})
    for refused in (render_call("read_note", {"query": body[0]}), render_call("read_notes", {"title": body[0]}),
                    render_call("read_note", {"title": 7})):
        assert mcp.verify_transcript(lookup, [(refused, right_body)]) == (0.0, False)
    bad_create = render_call("create_note", {"title": p["title"], "text": p["body"], "tags": p["tags"]})
    assert mcp.verify_transcript(create, [(bad_create, shown)]) == (0.0, False)
    assert mcp.verify_transcript(create, [(bad_create, "{}"), (listed, shown)]) == (1.0, True)
    update = McpTaskSampler(kinds=("update",), servers=("records",)).sample(1, seed=0)[0]
    assert mcp.verify_transcript(update, [(read, "{}")]) is None  # a `lacks` condition
    assert domain_hooks(mcp).verify_transcript(None, [(read, "{}")]) is None


def test_replay_gives_the_real_outcome(mcp, tasks) -> None:
    lookup, create = tasks
    env = mcp.make_env()
    try:
        ok = replay(env, lookup, [solve(lookup)])
        assert ok.success and ok.steps == 1
        assert json.loads(ok.observations[0])["body"] == lookup.check["all"][0]["answer"]
        # the episode ends at its first success: later actions are not run
        done = replay(env, create, [solve(create), solve(lookup)])
        assert done.success and done.steps == 1
    finally:
        env.close()
    wrong = render_call("read_note", {"title": "no-such-note"})
    got = replay_many(mcp.make_env, [(lookup, [wrong]), (create, [solve(create)])], workers=2)
    assert [r.success for r in got] == [False, True]
    assert got[0].observations[0].startswith("Error")
    a = agreement([True, True, False, False, True], [True, False, True, False, True])
    assert (a.tp, a.fp, a.fn, a.tn) == (2, 1, 1, 1)
    assert a.precision == pytest.approx(2 / 3) and a.recall == pytest.approx(2 / 3)
    assert a.refuted == pytest.approx(1 / 3)
    assert agreement([False], [False]).precision is None
    with pytest.raises(ValueError, match="2 predictions for 1 true"):
        agreement([True, False], [True])


def test_sources_agree_with_the_truth_on_a_faithful_simulator(mcp, tasks) -> None:
    real = mcp.make_env()
    try:
        for task in tasks:
            wrong = render_call("read_note", {"title": "no-such-note"})
            oracle = RealOracle(real, task)
            steps, episode = sim_episode(oracle, mcp, task, [wrong, solve(task)], "footer")
            assert [s[1] for s in steps] == [0.0, 1.0] and steps[-1][2] and steps[-1][4]["success"]
            assert episode.verdicts["footer"] == (1.0, True)
            assert episode.verdicts["transcript"] == (1.0, True)
            assert episode.verdicts["agree"] == (1.0, True) and not episode.malformed
            assert replay(real, task, episode.actions).success
    finally:
        real.close()


def test_an_exploited_simulator_is_refuted_by_the_real_replay(mcp, tasks) -> None:
    lookup, create = tasks
    wrong_read = render_call("read_note", {"title": "no-such-note"})
    wrong_create = solve(create).replace(create.setup["params"]["body"], "other words")
    episodes = []
    for task, action, source in ((lookup, wrong_read, "footer"), (create, wrong_create, "transcript"),
                                 (lookup, solve(lookup), "agree")):
        steps, episode = sim_episode(Flatterer(), mcp, task, [action], source)
        episodes.append(episode)
        obs, reward, terminated, truncated, info = steps[0]
        assert info["verdicts"]["footer"] == (1.0, True)
        if source == "footer":  # the flatterer's footer is believed
            assert (reward, terminated, info["success"]) == (1.0, True, True)
        else:  # the transcript shows no body / another body: unrewarded
            assert reward == 0.0 and not info["success"]
    # the flatterer echoes the call: the right lookup's transcript shows no body either
    assert episodes[2].verdicts["transcript"] == (0.0, False)
    assert episodes[2].verdicts["agree"] == (0.0, True)
    true = [r.success for r in replay_many(mcp.make_env, [(e.task, e.actions) for e in episodes])]
    assert true == [False, False, True]
    footer = agreement([e.success("footer") for e in episodes], true)
    transcript = agreement([e.success("transcript") for e in episodes], true)
    assert (footer.precision, footer.recall, footer.refuted) == (pytest.approx(1 / 3), 1.0, pytest.approx(2 / 3))
    assert (transcript.tp, transcript.fp, transcript.fn) == (0, 0, 1)
    report = gap_report(episodes, mcp.make_env, workers=2)
    assert report["episodes"] == 3 and report["parse_rate"] == 1.0
    assert report["real_success"] == pytest.approx(1 / 3)
    assert report["sources"]["footer"]["sim_success"] == 1.0
    assert report["sources"]["footer"]["refuted"] == pytest.approx(2 / 3)
    assert report["sources"]["transcript"]["sim_success"] == 0.0
    assert [x["actions"] for x in report["refuted_examples"]] == [[wrong_read], [wrong_create]]
    assert report["refuted_examples"][0]["real"].startswith("Error executing tool read_note")
    assert combine(None, (1.0, True)) == (0.0, True) and combine(None, None) == (0.0, False)
    with pytest.raises(ValueError, match="reward source must be one of"):
        RewardedSimEnv(SimEnv(Flatterer(), domain=mcp, reward_source="none"), mcp, "oracle")
    with pytest.raises(ValueError, match="'judge' needs a judge"):
        RewardedSimEnv(SimEnv(Flatterer(), domain=mcp, reward_source="none"), mcp, "judge")
