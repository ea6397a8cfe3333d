"""The classic domains as plugins: policies, scorer, prompt, registration, the collect CLI."""

from __future__ import annotations

import pytest
from agentworld.core.io import read_episodes
from agentworld.core.plugins import get_domain, names
from agentworld.core.protocols import Domain, Policy
from agentworld.core.types import Action, Observation, Step
from agentworld.domains.classic.domain import ClassicDomain
from agentworld.domains.classic.plugin import NAMES


def play(domain: ClassicDomain, policy_name: str, seed: int, max_steps: int = 200):
    env = domain.make_env()
    policy = domain.policies()[policy_name]
    policy.reset(seed)
    task = domain.tasks().sample(1, seed=seed)[0]
    obs, _ = env.reset(seed=seed, options={"task": task})
    history, total, terminated = [obs], 0.0, False
    for _ in range(max_steps):
        action = policy.act(task, history)
        if action is None:
            break
        obs, reward, terminated, truncated, _ = env.step(action)
        history += [action, obs]
        total += reward
        if terminated or truncated:
            break
    return history, total, terminated


def test_expert_is_optimal_on_deterministic_variants():
    history, total, terminated = play(ClassicDomain("frozenlake-8x8"), "expert", seed=0)
    assert terminated and total == 1.0 and (len(history) - 1) // 2 == 14
    history, total, terminated = play(ClassicDomain("frozenlake-4x4"), "expert", seed=0)
    assert terminated and total == 1.0 and (len(history) - 1) // 2 == 6
    history, total, terminated = play(ClassicDomain("cliffwalking"), "expert", seed=0)
    assert terminated and total == -13.0  # up, 11 x right, down
    taxi = ClassicDomain("taxi")
    for seed in range(8):
        history, total, terminated = play(taxi, "expert", seed)
        steps = (len(history) - 1) // 2
        assert terminated and steps <= 20 and total == 20 - (steps - 1), (seed, steps)
        assert history[-2].text == "dropoff" and history[-1].text.endswith("status: delivered")


def test_slippery_expert_beats_random():
    domain = ClassicDomain("frozenlake-4x4-slippery")
    expert = sum(play(domain, "expert", s, 100)[1] for s in range(60)) / 60
    random_ = sum(play(domain, "random", s, 100)[1] for s in range(60)) / 60
    assert expert > 0.55 and random_ < 0.1, (expert, random_)  # optimum 0.74 (gymnasium docs)


def test_policies_are_seeded_and_epsilon_expert_varies():
    domain = ClassicDomain("taxi")
    runs = [[a.text for a in play(domain, "random", 4, 30)[0][1::2]] for _ in range(2)]
    assert runs[0] == runs[1] and len(set(runs[0])) > 2
    eps = [tuple(a.text for a in play(domain, "epsilon-expert", s, 200)[0][1::2]) for s in range(6)]
    expert = [tuple(a.text for a in play(domain, "expert", s, 200)[0][1::2]) for s in range(6)]
    assert eps != expert
    for policy in domain.policies().values():
        assert isinstance(policy, Policy)


def test_policy_reads_state_from_text_alone():
    domain = ClassicDomain("frozenlake-8x8")
    obs = Observation(text=domain.initial_observation(None))
    assert domain.policies()["expert"].act(None, [obs]).text in ("right", "down")
    done = Observation(
        text="agent: row 3, col 3\nSFFF\nFHFH\nFFFH\nHFFA\nreward: 1\nstatus: reached the goal"
    )
    assert ClassicDomain("frozenlake-4x4").policies()["random"].act(None, [done]) is None


def test_scorer():
    domain = ClassicDomain("frozenlake-8x8")
    env = domain.make_env()
    ref, _ = env.reset(seed=0)
    moved, *_ = env.step("right")
    assert domain.score(ref.text, ref) == 1.0
    # two cells of 64 and the position line differ: 0.7 * 62/64 + 0.3 * 1/2
    assert domain.score(moved.text, ref) == pytest.approx(0.7 * 62 / 64 + 0.15)
    assert domain.score("", ref) == 0.0
    assert domain.score(ref.text + "\n", ref) < 1.0
    wrong_reward = ref.text.replace("reward: 0", "reward: 1")
    assert domain.score(wrong_reward, ref) == pytest.approx(0.7 + 0.3 * 0.5)  # 1 of 2 info lines
    taxi = ClassicDomain("taxi")
    ref = Observation(text=taxi.initial_observation(taxi.tasks().sample(1, seed=0)[0]))
    assert taxi.score(ref.text, ref) == 1.0
    assert 0.0 < taxi.score(ref.text.replace("T", " "), ref) < 1.0


def test_explain_describes_the_change():
    domain = ClassicDomain("frozenlake-4x4")
    env = domain.make_env()
    obs0, _ = env.reset(seed=0)
    obs1, r, te, _, _ = env.step("down")
    step = Step(action={"text": "down"}, observation=obs1, reward=r, terminated=te)
    assert domain.explain(step, obs0.state) == "The agent moves down to (1, 0)."
    obs2, r, te, _tr, _ = env.step("right")
    step = Step(action={"text": "right"}, observation=obs2, reward=r, terminated=te)
    assert domain.explain(step, obs1.state) == "The agent moves right to (1, 1). It fell in a hole."


def test_domain_contract_and_plugin_registration():
    assert set(NAMES) <= set(names("domain"))
    domain = get_domain("frozenlake-8x8")
    assert isinstance(domain, Domain) and domain.name == "frozenlake-8x8"
    assert domain.defines_rewards is True and domain.history_window == 1
    assert domain.actions == ["left", "down", "right", "up"]
    assert get_domain("taxi").actions == ["south", "north", "east", "west", "pickup", "dropoff"]
    assert domain.is_deterministic(Action(text="up"))
    slippery = get_domain("frozenlake-8x8-slippery")
    assert not slippery.is_deterministic(Action(text="up"))
    assert slippery.is_deterministic(Action(text="fly"))
    prompt = get_domain("taxi").system_prompt(None)
    assert "<reward>R</reward><terminated>true|false</terminated>" in prompt
    assert "pickup" in prompt and "status: delivered" in prompt
    assert "slippery" in slippery.system_prompt(None) and "slippery" not in domain.system_prompt(
        None
    )
    facts = domain.describe()
    assert "FrozenLake8x8-v1" in facts["gymnasium"] and facts["time limit"] == "200 steps"


def test_collect_cli_writes_episodes(tmp_path):
    from agentworld.app.cli import app
    from typer.testing import CliRunner

    out = tmp_path / "fl.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "collect",
            "--domain",
            "frozenlake-8x8",
            "--episodes",
            "6",
            "--max-steps",
            "40",
            "--policy",
            "expert=1",
            "--policy",
            "epsilon-expert=1",
            "--policy",
            "random=1",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    episodes = read_episodes(str(out))
    assert len(episodes) == 6 and {e.metadata["policy"] for e in episodes} == {
        "expert",
        "epsilon-expert",
        "random",
    }
    expert = [e for e in episodes if e.metadata["policy"] == "expert"]
    assert all(len(e.steps) == 14 and e.steps[-1].reward == 1.0 for e in expert)
    assert all(
        e.metadata["rewards"] is True and e.metadata["history_window"] == 1 for e in episodes
    )
    assert episodes[0].initial_observation.text.startswith("agent: row 0, col 0\nAFFFFFFF")
    default = CliRunner().invoke(
        app,
        [
            "collect",
            "--domain",
            "taxi",
            "--episodes",
            "2",
            "--max-steps",
            "30",
            "--out",
            str(tmp_path / "t.jsonl"),
        ],
    )
    assert default.exit_code == 0, default.output  # the CLI's default mix scripted=1 random=1
    listing = CliRunner().invoke(app, ["domains"])
    assert listing.exit_code == 0 and "cliffwalking" in listing.output  # rich folds long names


class RealEnvOracle:
    """A perfect world model: answers each action with the real env's next observation + footer."""

    rewards = True  # a CardedWorldModel: answers carry the reward footer
    history_window = None

    def __init__(self, env):
        self.env, self.real = env, []

    def predict(self, requests, *, max_new_tokens=None):
        from agentworld.core.formats import wrap_observation
        from agentworld.core.types import Prediction

        out = []
        for messages in requests:
            obs, reward, terminated, _, _ = self.env.step(messages[-1]["content"])
            self.real.append((reward, terminated))
            text = wrap_observation(obs.text, reward=reward, terminated=terminated)
            out.append(Prediction(text=text, observation=obs.text))
        return out


@pytest.mark.parametrize("name", ["taxi", "frozenlake-8x8-slippery", "cliffwalking"])
@pytest.mark.parametrize("source", ["verifier", "model"])
def test_simenv_with_a_perfect_model_matches_the_real_env(name, source):
    from agentworld.sim.env import SimEnv

    domain = get_domain(name)
    task = domain.tasks().sample(1, seed=9)[0]
    oracle = RealEnvOracle(domain.make_env())
    oracle.env.reset(seed=9, options={"task": task})
    env = SimEnv(oracle, domain=domain, task=task, reward_source=source, max_steps=60)
    obs, _ = env.reset(seed=9)
    assert obs == domain.initial_observation(task)
    policy = domain.policies()["epsilon-expert"]
    history, sim = [Observation(text=obs)], []
    while (action := policy.act(task, history)) is not None:
        obs, reward, terminated, truncated, info = env.step(action.text)
        assert info["parsed"]
        sim.append((reward, terminated))
        history += [action, Observation(text=obs)]
        if terminated or truncated:
            break
    assert sim == oracle.real and len(sim) >= 5


def test_explore_policy_covers_every_reachable_state():
    from agentworld.core.collect import collect

    domain = ClassicDomain("frozenlake-8x8")
    episodes = collect(domain, 200, policies={"explore": 1}, seed=0, max_steps=60)
    seen = {s.observation.state["s"] for e in episodes for s in e.steps}
    assert len(seen) == 64  # every cell, holes and goal included
    expert_only = collect(domain, 200, policies={"expert": 1}, seed=0, max_steps=60)
    assert len({s.observation.state["s"] for e in expert_only for s in e.steps}) == 14
