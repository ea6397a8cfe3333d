"""Tabular Q-learning: update rule on known values, exploration schedule, determinism,
JSON round trip, and learning the real non-slippery FrozenLake 4x4 to a perfect policy."""

from __future__ import annotations

import json
import math

import pytest

from agentworld.core.plugins import get_domain
from agentworld.trainers.agents.envs import RealRunner, domain_actions
from agentworld.trainers.agents.evaluate import evaluate_agent
from agentworld.trainers.agents.qlearning import Decay, EpsilonSchedule, QLearningAgent


def _agent(seed: int = 0, **kw: object) -> QLearningAgent:
    kw = {"alpha": 0.5, "gamma": 0.95, "epsilon": EpsilonSchedule(1.0, 0.05, 200), **kw}
    return QLearningAgent(["left", "down", "right", "up"], seed=seed, **kw)  # type: ignore[arg-type]


def _train(seed: int, episodes: int = 300) -> QLearningAgent:
    domain = get_domain("frozenlake-4x4")
    agent = _agent(seed, ignore_lines=("reward:",))
    runner = RealRunner(domain, seed=seed, max_steps=100)
    try:
        runner.run(agent, episodes)
    finally:
        runner.close()
    return agent


def test_update_rule_known_values() -> None:
    agent = _agent(alpha=0.5, gamma=0.9)
    # Terminal: Q <- 0 + 0.5 * (1 - 0) = 0.5; the next state's values are ignored.
    agent.q["s1"] = [0.0, 0.0, 8.0, 0.0]
    assert agent.update("s0", "right", 1.0, "s1", terminated=True) == pytest.approx(1.0)
    assert agent.q["s0"] == [0.0, 0.0, 0.5, 0.0]
    # Bootstrapped: target 0 + 0.9 * max(Q(s1)) = 7.2; TD error 7.2 - 0.5; Q = 0.5 + 0.5 * 6.7.
    assert agent.update("s0", "right", 0.0, "s1", terminated=False) == pytest.approx(6.7)
    assert agent.q["s0"][2] == pytest.approx(3.85)
    assert agent.num_updates == 2
    assert agent.act("s0", greedy=True) == "right"
    with pytest.raises(ValueError, match="unknown action 'jump'"):
        agent.update("s0", "jump", 0.0, "s1", terminated=False)


def test_state_key_ignores_reward_line() -> None:
    agent = _agent(ignore_lines=("reward:",))
    agent.update("SA\nFG\nreward: -1", "down", 1.0, "x", terminated=True)
    assert list(agent.q) == ["SA\nFG"]
    assert agent.values("SA\nFG\nreward: -10") == [0.0, 0.5, 0.0, 0.0]


def test_epsilon_schedules() -> None:
    linear = EpsilonSchedule(1.0, 0.1, 100)
    assert [linear.value(k) for k in (0, 50, 100, 500)] == pytest.approx([1.0, 0.55, 0.1, 0.1])
    expo = EpsilonSchedule(1.0, 0.1, 100, Decay.EXPONENTIAL)
    assert expo.value(0) == 1.0
    assert expo.value(100) == pytest.approx(0.1 + 0.9 * math.exp(-5))
    with pytest.raises(ValueError, match="epsilon_start"):
        EpsilonSchedule(1.5, 0.1, 100)
    with pytest.raises(ValueError, match="alpha"):
        _agent(alpha=0.0)
    with pytest.raises(ValueError, match="distinct"):
        QLearningAgent(["left", "left"])


def test_greedy_ties_break_by_action_order_and_exploration_is_seeded() -> None:
    agent = _agent(epsilon=EpsilonSchedule(1.0, 1.0, 1))
    assert agent.act("unseen", greedy=True) == "left"
    draws = [agent.act("unseen") for _ in range(200)]
    assert set(draws) == {"left", "down", "right", "up"}
    again = _agent(epsilon=EpsilonSchedule(1.0, 1.0, 1))
    assert [again.act("unseen") for _ in range(200)] == draws


def test_learns_real_frozenlake_4x4_to_success_rate_one() -> None:
    agent = _train(seed=0)
    assert agent.num_episodes == 300
    domain = get_domain("frozenlake-4x4")
    result = evaluate_agent(agent, domain, episodes=20, seed=7)
    assert result["success_rate"] == 1.0 and result["successes"] == 20
    assert result["mean_return"] == 1.0
    assert result["mean_length"] == 6.0  # the shortest path from S to G on the 4x4 map
    assert result["success_ci"][1] == 1.0 and 0.8 < result["success_ci"][0] < 0.85


def test_same_seed_same_q_table_and_other_seed_differs() -> None:
    a, b, c = _train(seed=3, episodes=60), _train(seed=3, episodes=60), _train(4, episodes=60)
    assert a.q == b.q and a.num_updates == b.num_updates
    assert a.q != c.q


def test_save_load_round_trip(tmp_path) -> None:
    agent = _train(seed=1, episodes=50)
    path = agent.save(tmp_path / "agents" / "agent.json")
    assert sorted(p.name for p in path.parent.iterdir()) == ["agent.json"]  # no temp file left
    loaded = QLearningAgent.load(path)
    assert loaded.q == agent.q and loaded.actions == agent.actions
    assert (loaded.alpha, loaded.gamma, loaded.num_episodes) == (0.5, 0.95, 50)
    assert loaded.ignore_lines == ("reward:",)
    assert loaded.current_epsilon == agent.current_epsilon
    # The generator state travels too: both continue with the same exploration draws.
    assert [loaded.act("x") for _ in range(50)] == [agent.act("x") for _ in range(50)]
    data = json.loads(path.read_text())
    data["version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="version"):
        QLearningAgent.load(path)


def test_domain_actions_of_classic_domains_and_bad_domain() -> None:
    assert domain_actions(get_domain("frozenlake-4x4")) == ["left", "down", "right", "up"]
    taxi = domain_actions(get_domain("taxi"))
    assert sorted(taxi) == sorted(["south", "north", "east", "west", "pickup", "dropoff"])

    class NoActions:
        name = "terminal-like"

    with pytest.raises(ValueError, match="no finite action list"):
        domain_actions(NoActions())


def test_key_lines_abstract_the_state_and_round_trip(tmp_path):
    agent = QLearningAgent(["left", "right"], key_lines=("agent:", "passenger:"))
    real = "agent: row 1, col 2\nSFA\nreward: 0"
    drawn_wrong = "agent: row 1, col 2\nSAF\nreward: 1"
    assert agent.key(real) == agent.key(drawn_wrong) == "agent: row 1, col 2"
    assert agent.key("no position here") == "no position here"  # falls back to the text
    agent.update(real, "right", 1.0, "agent: row 1, col 3\nSFF", True)
    loaded = QLearningAgent.load(agent.save(tmp_path / "agent.json"))
    assert loaded.key_lines == ("agent:", "passenger:")
    assert loaded.values(drawn_wrong) == agent.values(real) != [0.0, 0.0]


def test_optimistic_initial_values_and_warm_start(tmp_path):
    from agentworld.trainers.agents.config import AgentConfig
    from agentworld.trainers.agents.dyna import make_agent, train_q_learning

    common = {
        "env": "real:frozenlake-8x8",
        "alpha": 0.5,
        "key_lines": ["agent:"],
        "eval_episodes": 20,
        "baseline": False,
        "progress": False,
    }
    # FrozenLake pays only at the goal: optimistic unseen values explore systematically.
    out = train_q_learning(
        AgentConfig(output_dir=str(tmp_path / "opt"), episodes=300, initial_q=1.0, **common)
    )
    metrics = json.loads((tmp_path / "opt" / "metrics.json").read_text())
    assert metrics["eval"]["success_rate"] == 1.0
    warm = make_agent(
        AgentConfig(
            output_dir=str(tmp_path / "w"),
            episodes=10,
            epsilon_start=0.2,
            init_agent=str(tmp_path / "opt" / "agent.json"),
            **common,
        ),
        ["left", "down", "right", "up"],
    )
    saved = QLearningAgent.load(tmp_path / "opt" / "agent.json")
    assert warm.q == saved.q and warm.num_episodes == 0 and warm.current_epsilon == 0.2
    assert out == str(tmp_path / "opt")
