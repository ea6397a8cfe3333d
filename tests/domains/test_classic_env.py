"""The classic domains' real environments: rendering, seeding, invalid actions, verify."""

from __future__ import annotations

import pytest
from agentworld.core.types import Action
from agentworld.domains.classic.domain import ClassicDomain
from agentworld.domains.classic.env import ClassicEnv
from agentworld.domains.classic.render import parse
from agentworld.domains.classic.variants import VARIANTS


def agent_cell(text: str, marks: str = "A") -> tuple[int, int]:
    """(row, col) of the mark in the map (the lines after the position line)."""
    lines = text.split("\n")
    grid = lines[
        1 + next(i for i, line in enumerate(lines) if line.startswith(("agent:", "taxi:"))) :
    ]
    cells = [(r, c) for r, line in enumerate(grid) for c, ch in enumerate(line) if ch in marks]
    assert len(cells) == 1, text
    return cells[0]


def test_frozenlake_render_shows_agent_after_known_moves():
    env = ClassicEnv("frozenlake-4x4")
    obs, _ = env.reset(seed=0)
    assert obs.text == "agent: row 0, col 0\nAFFF\nFHFH\nFFFH\nHFFG\nreward: 0"
    for word in ("down", "down", "right"):
        obs, reward, terminated, truncated, _ = env.step(Action(text=word))
    assert obs.text == "agent: row 2, col 1\nSFFF\nFHFH\nFAFH\nHFFG\nreward: 0"
    assert obs.state["s"] == 9 and (obs.state["row"], obs.state["col"]) == (2, 1)
    assert (reward, terminated, truncated) == (0.0, False, False)
    obs, reward, terminated, _, _ = env.step("down")  # (3, 1) is frozen
    obs, reward, terminated, _, _ = env.step("LEFT")  # (3, 0) is a hole
    assert obs.text.split("\n")[4] == "AFFG"
    assert obs.text.endswith("reward: 0\nstatus: fell in a hole")
    assert (reward, terminated) == (0.0, True)


def test_frozenlake_goal_and_cliff_and_taxi_marks():
    env = ClassicEnv("frozenlake-4x4")
    env.reset(seed=0)
    for word in ("down", "down", "right", "right", "down"):
        obs, reward, terminated, _, _ = env.step(word)
    obs, reward, terminated, _, _ = env.step("right")
    assert agent_cell(obs.text) == (3, 3)
    assert obs.text.endswith("reward: 1\nstatus: reached the goal") and reward == 1.0 and terminated

    cliff = ClassicEnv("cliffwalking")
    obs, _ = cliff.reset(seed=0)
    assert agent_cell(obs.text) == (3, 0)
    obs, reward, terminated, _, _ = cliff.step("right")  # into the cliff: back to start
    assert (reward, terminated, agent_cell(obs.text)) == (-100.0, False, (3, 0))
    assert obs.text.endswith("reward: -100")
    obs, reward, _, _, _ = cliff.step("up")
    assert (reward, agent_cell(obs.text)) == (-1.0, (2, 0))

    taxi = ClassicEnv("taxi")
    obs, _ = taxi.reset(seed=3)
    row, col = obs.state["row"], obs.state["col"]
    assert agent_cell(obs.text, "T") == (row, 2 * col + 1)
    p, d = obs.state["passenger"], obs.state["destination"]
    assert f"passenger: at {p}, destination: {d}" in obs.text


def test_taxi_pickup_draws_loaded_taxi():
    env = ClassicEnv("taxi")
    domain = ClassicDomain("taxi")
    policy = domain.policies()["expert"]
    obs, _ = env.reset(seed=11)
    history = [obs]
    while obs.state["passenger"] != "taxi":
        action = policy.act(None, history)
        obs, reward, *_ = env.step(action)
        history += [action, obs]
    assert action.text == "pickup" and reward == -1.0
    assert "@" in obs.text and "T" not in obs.text.split("passenger")[0]
    assert f"passenger: in taxi, destination: {obs.state['destination']}" in obs.text


@pytest.mark.parametrize("name", ["frozenlake-8x8-slippery", "taxi", "frozenlake-4x4-slippery"])
def test_same_seed_same_episode(name):
    def episode(seed: int) -> list[str]:
        env = ClassicEnv(name)
        task = ClassicDomain(name).tasks().sample(3, seed=5)[1]
        obs, _ = env.reset(seed=seed, options={"task": task})
        texts = [obs.text]
        words = VARIANTS[name].actions
        for i in range(40):
            obs, _, terminated, truncated, _ = env.step(words[(i * 7 + i // 3) % len(words)])
            texts.append(obs.text)
            if terminated or truncated:
                break
        return texts

    first, again, other = episode(7), episode(7), episode(8)
    assert first == again
    if "slippery" in name:
        assert first != other  # the seed drives the slippery dynamics
    assert len(first) > 2


def test_task_seed_fixes_taxi_start_and_initial_observation():
    domain = ClassicDomain("taxi")
    tasks = domain.tasks().sample(6, seed=1)
    assert [t.id for t in tasks] == [t.id for t in domain.tasks().sample(6, seed=1)]
    assert tasks != domain.tasks().sample(6, seed=2)
    env = domain.make_env()
    starts = set()
    for seed, task in enumerate(tasks):
        obs, info = env.reset(seed=seed, options={"task": task})
        assert info["env_seed"] == task.setup["env_seed"]
        assert obs.text == domain.initial_observation(task)
        p, d = obs.state["passenger"], obs.state["destination"]
        assert task.instruction == f"Pick up the passenger at {p} and drop them at {d}."
        starts.add(obs.state["s"])
    assert len(starts) > 1


def test_invalid_action_is_defined_and_changes_nothing():
    env = ClassicEnv("frozenlake-8x8")
    env.reset(seed=0)
    obs0, *_ = env.step("right")
    obs, reward, terminated, truncated, info = env.step(Action(text="  Jump\nhigh "))
    lines = obs.text.split("\n")
    assert lines[0] == "invalid action: Jump high; valid: left, down, right, up"
    assert "\n".join(lines[1:]) == obs0.text
    assert obs.state["s"] == obs0.state["s"] and obs.state["invalid"] == "Jump high"
    assert (reward, terminated, truncated, info["invalid"]) == (0.0, False, False, True)
    obs, *_ = env.step(" Right ")
    assert agent_cell(obs.text) == (0, 2)
    domain = ClassicDomain("frozenlake-8x8")
    assert domain.action_type(Action(text=" Right ")) == "right"
    assert domain.action_type(Action(text="jump")) == "invalid"
    with pytest.raises(RuntimeError, match="before reset"):
        ClassicEnv("taxi").step("north")


def test_time_limit_truncates_and_counts_invalid_steps():
    env = ClassicEnv("frozenlake-4x4")
    env.reset(seed=0)
    assert env.max_episode_steps == 100
    results = [env.step("up" if i % 2 else "xyz") for i in range(100)]
    assert not any(r[3] for r in results[:99]) and results[99][3] is True
    assert ClassicEnv("frozenlake-8x8").max_episode_steps == 200
    assert ClassicEnv("cliffwalking").max_episode_steps is None


def test_verify_agrees_with_real_env_on_random_and_expert_transitions():
    checked = 0
    for name in VARIANTS:
        domain = ClassicDomain(name)
        env = domain.make_env()
        for k, task in enumerate(domain.tasks().sample(8, seed=3)):
            policy = domain.policies()[("random", "epsilon-expert", "expert")[k % 3]]
            policy.reset(k)
            obs, _ = env.reset(seed=k, options={"task": task})
            assert domain.verify(obs.text, task) == (0.0, False)
            history = [obs]
            for _ in range(30):
                action = policy.act(task, history)
                if action is None:
                    break
                obs, reward, terminated, truncated, _ = env.step(action)
                assert domain.verify(obs.text, task) == (reward, terminated), (name, obs.text)
                assert parse(domain.variant, obs.text).s == obs.state["s"]
                checked += 1
                history += [action, obs]
                if terminated or truncated:
                    break
    assert checked >= 300
    domain = ClassicDomain("frozenlake-4x4")
    assert domain.verify("not a grid", None) is None
    assert (
        domain.verify("agent: row 0, col 0\nAFFF\nFHFH\nFFFH\nHFFA\nreward: 0", None) is None
    )  # two agents
    assert (
        domain.verify("agent: row 2, col 2\nSFFF\nFHFH\nFFFH\nHFFA\nreward: 1", None) is None
    )  # wrong line
    assert domain.verify("agent: row 3, col 3\nSFFF\nFHFH\nFFFH\nHFFA\nreward: 1", None) == (
        1.0,
        True,
    )
    taxi = ClassicDomain("taxi")
    assert taxi.verify("|R: | : :G|\n" * 5 + "reward: -1", None) is None
