"""Reward and termination of simulated steps: the model's footer, a domain verifier, and
what happens to answers that do not parse."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from agentworld.core.types import Task
from agentworld.sim import SimEnv, Simulator
from agentworld.sim.backends.hf import HFBackend
from agentworld.sim.vector_env import SimVectorEnv


class GridDomain:
    """A domain that defines rewards: the agent wins when the observation shows ``G*``."""

    name, version = "grid", "0"
    defines_rewards = True
    history_window = 1

    def system_prompt(self, task: Task | None) -> str:
        return "You simulate a grid."

    def tasks(self):
        class Sampler:
            def sample(self, n: int, *, seed: int) -> list[Task]:
                return [Task(id=f"g{seed}-{i}", domain="grid", instruction="go") for i in range(n)]

        return Sampler()

    def initial_observation(self, task: Task | None) -> str:
        return f"start {task.id if task else 'none'}"

    def verify(self, observation: str, task: Task | None) -> tuple[float, bool] | None:
        if "hello" not in observation:
            return None
        return 0.5, True


def test_card_sets_rewards_and_model_predicts_reward_and_termination(rewarded_dir: Path) -> None:
    wm = HFBackend().load(str(rewarded_dir), max_new_tokens=48)
    assert wm.rewards is True and wm.history_window == 1
    env = SimEnv(wm, domain=GridDomain(), task=Task(id="t1", domain="grid", instruction="go"))
    assert env.reward_source == "model"
    obs, _ = env.reset(seed=0)
    assert obs == "start t1"  # from domain.initial_observation
    obs, reward, terminated, truncated, info = env.step("right")
    assert (obs, reward, terminated, truncated) == ("hello.txt", 1.0, True, False)
    assert info["parsed"] and info["retries"] == 0
    assert info["raw"].endswith("<terminated>true</terminated>")  # stopped after the footer
    assert env.parse_failures == 0


def test_verifier_source_overrides_the_footer(rewarded_dir: Path) -> None:
    wm = HFBackend().load(str(rewarded_dir), max_new_tokens=48)
    env = SimEnv(wm, domain=GridDomain(), reward_source="verifier")
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("right")
    assert (reward, terminated, info["verified"]) == (0.5, True, True)


def test_missing_footer_truncates_or_retries_and_is_counted(trained_dir: Path) -> None:
    # This model answers with a block but no footer: with rewards required it never parses.
    greedy = HFBackend().load(str(trained_dir), max_new_tokens=40, rewards=True)
    env = SimEnv(greedy, domain=GridDomain(), on_parse_error="truncate")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("ls")
    assert (obs, reward, terminated, truncated) == ("", 0.0, False, True)
    assert info["truncated_reason"] == "malformed" and env.parse_failures == 1

    sampled = HFBackend().load(
        str(trained_dir), max_new_tokens=40, rewards=True, temperature=1.0, seed=0
    )
    env = SimEnv(sampled, domain=GridDomain(), on_parse_error="retry", max_retries=3)
    env.reset(seed=0)
    _, _, _, truncated, info = env.step("ls")
    assert truncated and info["retries"] == 3 and env.parse_failures == 4


def test_vector_env_rewards_and_retry_counts(rewarded_dir: Path, trained_dir: Path) -> None:
    vec = SimVectorEnv(
        HFBackend().load(str(rewarded_dir), max_new_tokens=48), 3, domain=GridDomain()
    )
    vec.reset(seed=0)
    obs, rewards, terminations, truncations, infos = vec.step(["a", "b", "c"])
    assert obs == ("hello.txt",) * 3
    np.testing.assert_array_equal(rewards, [1.0, 1.0, 1.0])
    assert terminations.all() and not truncations.any()

    bad = HFBackend().load(str(trained_dir), max_new_tokens=40, rewards=True)
    vec = SimVectorEnv(bad, 2, domain=GridDomain(), on_parse_error="retry", max_retries=1)
    vec.reset(seed=0)
    _, rewards, terminations, truncations, infos = vec.step(["a", "b"])
    assert truncations.all() and not terminations.any() and vec.parse_failures == 4
    assert list(infos["retries"]) == [1, 1]


def test_bad_reward_options_fail_before_any_step(trained_dir: Path) -> None:
    wm = HFBackend().load(str(trained_dir), max_new_tokens=8)
    with pytest.raises(ValueError, match="reward footer"):
        SimEnv(wm, reward_source="model")
    with pytest.raises(ValueError, match="verify"):
        SimEnv(wm, reward_source="verifier")
    with pytest.raises(ValueError, match="on_parse_error"):
        SimEnv(wm, on_parse_error="ignore")
    with pytest.raises(ValueError, match="history_window"):
        Simulator(wm, history_window=-1)


def test_history_window_limits_the_request(rewarded_dir: Path) -> None:
    seen: list[list[dict[str, str]]] = []

    class Recorder:
        rewards, history_window = True, 1

        def predict(self, requests, *, max_new_tokens=None):
            from agentworld.core.types import Prediction

            seen.extend(requests)
            text = "<predicted_observation>\nx\n</predicted_observation>\n<reward>0</reward><terminated>false</terminated>"
            return [Prediction(text=text, observation="x") for _ in requests]

    sim = Simulator(Recorder())
    episode = sim.open_sync("sys", "start")
    for action in ("a", "b", "c"):
        sim.step_many([(episode, action)])
    assert [m["content"] for m in seen[-1]][1:] == ["b", seen[-1][2]["content"], "c"]
    assert len(sim.messages(episode)) == 7  # the full history is kept
