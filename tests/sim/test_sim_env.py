"""SimEnv: Gymnasium contract with text spaces."""

from __future__ import annotations

from pathlib import Path

import pytest
from gymnasium.utils.env_checker import check_env

from agentworld.core.builtins import ConstantWorldModel
from agentworld.core.types import Task
from agentworld.sim import SimEnv, Simulator
from agentworld.sim.backends.hf import HFBackend


class FakeDomain:
    name, version = "fake", "0"

    def system_prompt(self, task: Task | None) -> str:
        return f"You simulate the fake env for {task.id if task else 'free play'}."


def test_check_env_constant_model() -> None:
    env = SimEnv(
        ConstantWorldModel("copy-previous"), initial_observation="user@host:~$ ", render_mode="ansi"
    )
    check_env(env)


def test_check_env_trained_hf_model(trained_dir: Path) -> None:
    wm = HFBackend().load(str(trained_dir), max_new_tokens=40)
    env = HFBackend().make_env(wm, initial_observation="$ ", max_length=100, render_mode="ansi")
    check_env(env)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("ls -la")
    assert (obs, reward, terminated, truncated) == ("hello.txt", 0.0, False, False)
    assert info["parsed"] and info["raw"].endswith("</predicted_observation>")
    assert obs in env.observation_space


def test_random_model_truncates_on_malformed_answer(qwen3_dir: Path) -> None:
    # check_env is not applicable here: it asserts an env never truncates after one step,
    # and an untrained model's answer is malformed, which this env reports as truncation.
    env = SimEnv(
        HFBackend().load(str(qwen3_dir), max_new_tokens=8),
        initial_observation="$ ",
        render_mode="ansi",
    )
    obs, info = env.reset(seed=1)
    assert obs == "$ " and obs in env.observation_space and info["episode_id"]
    obs, reward, terminated, truncated, info = env.step("ls")
    assert (obs, reward, terminated, truncated) == ("", 0.0, False, True)
    assert (
        info["parsed"] is False
        and info["truncated_reason"] == "malformed"
        and info["num_tokens"] == 8
    )
    assert "[malformed answer]" in env.render()
    with pytest.raises(RuntimeError):
        env.step("ls")
    env.reset()
    env.close()
    env.close()


def test_max_steps_domain_options_and_render() -> None:
    task = Task(id="t7", domain="fake", instruction="find the key")
    env = SimEnv(
        ConstantWorldModel("copy-previous"),
        domain=FakeDomain(),
        task=task,
        max_steps=2,
        render_mode="ansi",
    )
    obs, _ = env.reset(options={"initial_observation": "room A"})
    assert obs == "room A"
    system = env.simulator.messages(env.episode_id)[0]["content"]
    assert "fake env for t7" in system and "find the key" in system
    assert env.step("look")[3] is False
    *_, truncated, info = env.step("look")
    assert truncated and info["truncated_reason"] == "max_steps"
    assert env.render().endswith(">>> look\nroom A\n")
    env.reset(options={"system_prompt": "custom", "task": None})
    assert env.simulator.messages(env.episode_id)[0]["content"].startswith("custom")


def test_envs_share_one_simulator() -> None:
    sim = Simulator(ConstantWorldModel("copy-previous"))
    envs = [SimEnv(sim, initial_observation=f"obs {i}") for i in range(3)]
    for env in envs:
        env.reset()
    assert len(sim) == 3
    assert [env.step("x")[0] for env in envs] == ["obs 0", "obs 1", "obs 2"]
