"""Re-anchoring of simulated episodes on the real mcp notes server (issue 34's mitigation): at
an anchor the agent sees the real observation, reward and success, the world model's history
holds the real observation, and the real steps spent are counted.

The simulator is a real :class:`~agentworld.sim.SimEnv` over a flatterer world model that
reports every call a success (what an agent exploiting a simulator finds); the truth is the
real server, stepped independently with :func:`~agentworld.trainers.agents.simrl.replay.replay`.
"""

from __future__ import annotations

import json

import pytest
from agentworld.core import plugins
from agentworld.core.formats import parse_transition, wrap_observation
from agentworld.core.types import Prediction, Task
from agentworld.domains.mcp.calls import parse_call, render_call
from agentworld.domains.mcp.tasks import McpTaskSampler
from agentworld.sim import SimEnv
from agentworld.trainers.agents.simrl.anchor import Anchoring, RealTwin
from agentworld.trainers.agents.simrl.evaluate import gap_report
from agentworld.trainers.agents.simrl.replay import replay
from agentworld.trainers.agents.simrl.rewards import RewardedSimEnv, SimEpisode


class Flatterer:
    rewards = True
    history_window = None

    def __init__(self) -> None:
        self.requests: list[list[dict]] = []

    def predict(self, requests, **_):
        self.requests += requests
        out = []
        for messages in requests:
            parsed = parse_call(messages[-1]["content"])
            body = json.dumps({"ok": parsed[1] if not isinstance(parsed, str) else {}})
            out.append(Prediction(text=wrap_observation(body, reward=1.0, terminated=True),
                                  observation=body, reward=1.0, terminated=True))  # fmt: skip
        return out


@pytest.fixture(scope="module")
def mcp():
    return plugins.get_domain("mcp")


@pytest.fixture(scope="module")
def lookup() -> Task:
    return McpTaskSampler(kinds=("lookup",), servers=("notes",)).sample(1, seed=1)[0]


def run(mcp, task: Task, actions: list[str], anchoring: Anchoring) -> tuple[list, SimEpisode, Flatterer, list]:
    """One re-anchored episode: ``(steps, finished episode, world model, simulator history)``."""
    wm, finished = Flatterer(), []
    sim = SimEnv(wm, domain=mcp, reward_source="none", max_steps=4)
    env = RewardedSimEnv(sim, mcp, "footer", on_episode=finished.append, anchoring=anchoring)
    env.reset(options={"task": task})
    steps = []
    for action in actions:
        steps.append(env.step(action))
        if steps[-1][2] or steps[-1][3]:
            break
    history = sim.simulator.messages(sim.episode_id) if sim.episode_id else []
    env.close()
    assert len(finished) == 1
    return steps, finished[0], wm, history


def test_anchor_at_episode_end_gives_the_real_observation(mcp, lookup: Task) -> None:
    wrong = render_call("read_note", {"title": "no-such-note"})
    right = render_call("read_note", {"title": lookup.setup["params"]["title"]})
    real_env = mcp.make_env()
    try:
        truth = replay(real_env, lookup, [wrong, right])
    finally:
        real_env.close()
    assert truth.success and truth.observations[0].startswith("Error")
    steps, episode, wm, history = run(mcp, lookup, [wrong, right], Anchoring(mcp.make_env, every=0, at_end=True))
    (obs1, r1, term1, trunc1, info1), (obs2, r2, term2, trunc2, info2) = steps
    # the flatterer said success at step 1; the anchor replaces it with the real error, and
    # the episode goes on from the real state
    assert obs1 == truth.observations[0] and (r1, term1, trunc1, info1["success"]) == (0.0, False, False, False)
    assert info1["anchored"] and info1["real_steps"] == 1 and info1["simulated_observation"].startswith('{"ok"')
    assert info1["verdicts"]["footer"] == (1.0, True)  # what the simulator said
    # the world model's next request conditions on the real observation
    assert parse_transition(wm.requests[1][-2]["content"], rewards=True).observation == truth.observations[0]
    assert obs2 == truth.observations[1] and (r2, term2, info2["success"], info2["real_steps"]) == (1.0, True, True, 1)
    assert episode.observations == truth.observations and episode.real_steps == 2 and episode.rewarded
    # the simulator's history holds the real observations in place of its predictions
    assert [parse_transition(m["content"], rewards=True).observation for m in history[2::2]] == truth.observations


def test_anchor_every_k_steps(mcp, lookup: Task) -> None:
    wrong = render_call("read_note", {"title": "no-such-note"})
    other = render_call("list_notes", {})
    steps, episode, _, _ = run(mcp, lookup, [wrong, other, wrong], Anchoring(mcp.make_env, every=2, at_end=False))
    real_env = mcp.make_env()
    try:
        truth = replay(real_env, lookup, [wrong, other])
    finally:
        real_env.close()
    # step 1: not anchored, the flatterer's success stands (the footer source ends the episode)
    assert len(steps) == 1 and steps[0][1] == 1.0 and "anchored" not in steps[0][4]
    assert episode.real_steps == 0 and episode.rewarded
    # without the end anchor the footer is believed; with every=1 the same call is refuted
    steps, episode, _, _ = run(mcp, lookup, [wrong, other, wrong], Anchoring(mcp.make_env, every=1, at_end=False))
    assert [s[0] for s in steps[:2]] == truth.observations and [s[1] for s in steps] == [0.0, 0.0, 0.0]
    assert [s[4]["real_steps"] for s in steps] == [1, 1, 1] and episode.real_steps == 3
    assert not steps[-1][2] and not steps[-1][3]  # the episode goes on (reported at close)


def test_real_twin_runs_each_action_once_and_stops_at_the_real_end(mcp, lookup: Task) -> None:
    right = render_call("read_note", {"title": lookup.setup["params"]["title"]})
    wrong = render_call("read_note", {"title": "no-such-note"})
    twin = RealTwin(mcp.make_env)
    try:
        first = twin.catch_up(lookup, [wrong])
        assert first.observation.startswith("Error") and (first.steps, first.ended, first.success) == (1, False, False)
        done = twin.catch_up(lookup, [wrong, right, wrong])  # the real episode ends at `right`
        assert (done.steps, done.ended, done.success, done.reward) == (1, True, True, 1.0)
        assert json.loads(done.observation)["body"] == lookup.check["all"][0]["answer"]
        assert twin.catch_up(lookup, [wrong, right, wrong, wrong]).steps == 0 and twin.real_steps == 2
        with pytest.raises(ValueError, match="call restart"):
            twin.catch_up(lookup, [wrong])
        twin.restart()
        assert twin.catch_up(lookup, [right]).success and twin.real_steps == 3
    finally:
        twin.close()
    with pytest.raises(ValueError, match="every >= 1 or at_end"):
        Anchoring(mcp.make_env, every=0, at_end=False)


def test_gap_report_counts_real_steps_and_rewarded_successes(mcp, lookup: Task) -> None:
    wrong = render_call("read_note", {"title": "no-such-note"})
    _, plain, _, _ = run(mcp, lookup, [wrong], Anchoring(mcp.make_env, every=5, at_end=False))
    _, anchored, _, _ = run(mcp, lookup, [wrong, wrong], Anchoring(mcp.make_env, every=0, at_end=True))
    report = gap_report([plain, anchored], mcp.make_env, workers=1)
    assert report["real_success"] == 0.0 and report["real_steps"] == 2
    assert report["sources"]["footer"]["fp"] == 2  # the flatterer's footer, both episodes
    assert report["rewarded"]["fp"] == 1 and report["rewarded"]["tn"] == 1  # the anchor refuted one
