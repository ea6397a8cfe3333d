"""The real environments as Gymnasium users meet them (issue 26): ``gymnasium.make`` by
``agentworld/...`` id, ``check_env``, string or ``Action`` actions, seeded task choice, and no
privileged state in what the agent gets."""

from __future__ import annotations

import warnings

import gymnasium
import pytest
from agentworld.core.collect import run_episode
from agentworld.core.types import Action, Observation, ObservationText
from agentworld.domains.classic import VARIANTS, ClassicDomain
from agentworld.domains.terminal.domain import TerminalDomain
from gymnasium.utils.env_checker import check_env
from sandboxes import needs_sandbox


def checked(env_id: str, **kwargs) -> None:
    """``check_env`` of ``gymnasium.make(env_id)``'s env, failing on any checker warning."""
    env = gymnasium.make(env_id, **kwargs)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)
    finally:
        env.close()


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_toy_text_envs_pass_check_env(variant: str) -> None:
    checked(f"agentworld/{variant}-v0")


def test_toy_text_env_takes_strings_and_actions() -> None:
    env = gymnasium.make("agentworld/frozenlake-4x4-v0")
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, str) and obs in env.observation_space and obs.state["s"] == 0
    by_text = env.step("right")
    env.reset(seed=0)
    by_action = env.step(Action(text="right"))
    assert by_text[0] == by_action[0] and by_text[1:4] == by_action[1:4]
    assert by_text[0].state["s"] == 1 and by_text[0] in env.observation_space
    with pytest.raises(TypeError, match="action must be a str or Action"):
        env.step(2)  # a Discrete index is not this env's action
    env.close()


@needs_sandbox
def test_terminal_env_passes_check_env() -> None:
    checked("agentworld/terminal-v0")


@needs_sandbox
def test_terminal_env_by_id_draws_tasks_by_seed_and_hides_privileged_state() -> None:
    env = gymnasium.make("agentworld/terminal-v0", max_steps=5)
    try:
        obs, info = env.reset(seed=7)
        assert obs == "user@sandbox:~$ " and isinstance(obs, ObservationText)
        first = info["task_id"]
        assert info["instruction"] and set(info) == {"sandbox", "task_id", "instruction"}
        assert env.reset(seed=7)[1]["task_id"] == first != env.reset(seed=8)[1]["task_id"]
        obs, reward, terminated, truncated, info = env.step("ls")  # a plain string action
        assert obs.endswith("user@sandbox:~$ ") and obs in env.observation_space
        assert set(obs.state) == {"cwd", "exit_code"} and "files" not in info
        private = env.unwrapped.privileged_state()
        assert set(private) == {"cwd", "exit_code", "files"} and private["files"]
    finally:
        env.close()


@needs_sandbox
def test_collection_records_the_privileged_state() -> None:
    """What collection records is as rich as before: the snapshot rides in each observation's
    recorded state, though the agent never got it."""
    domain = TerminalDomain()
    task = domain.tasks().sample(1, seed=3)[0]
    env = domain.make_env()
    try:
        episode = run_episode(domain, env, task, domain.policies()["scripted"], seed=3, max_steps=4)
    finally:
        env.close()
    states = [o.state for o in episode.observations()]
    assert all(type(o) is Observation for o in episode.observations())
    assert all(set(s) == {"cwd", "exit_code", "files"} for s in states)
    assert set(states[0]["files"]) >= set(task.setup["files"])
    assert "agentworld-ep-" not in episode.model_dump_json()


def test_classic_collection_keeps_the_board_state() -> None:
    domain = ClassicDomain("taxi")
    task = domain.tasks().sample(1, seed=0)[0]
    env = domain.make_env()
    episode = run_episode(domain, env, task, domain.policies()["expert"], seed=0, max_steps=3)
    assert [type(o) for o in episode.observations()] == [Observation] * 4
    assert all(isinstance(o.state["s"], int) for o in episode.observations())
