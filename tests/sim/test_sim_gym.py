"""The simulated terminal as Gymnasium users meet it (issue 26): ``gymnasium.make("agentworld/
sim-v0", checkpoint=...)``, the same first observation and seeded task as the real terminal,
and a reward source by default."""

from __future__ import annotations

import warnings
from pathlib import Path

import gymnasium
import pytest
from agentworld.core.builtins import ConstantWorldModel
from agentworld.core.types import Task
from agentworld.domains.terminal.domain import TerminalDomain
from agentworld.sim import SimEnv, SimVectorEnv
from gymnasium.utils.env_checker import check_env
from sandboxes import HAVE_SANDBOX

PROMPT = "user@sandbox:~$ "


def sim(domain: TerminalDomain, **kwargs) -> SimEnv:
    return SimEnv(ConstantWorldModel("empty", domain), domain=domain, **kwargs)


def test_simulated_terminal_starts_and_draws_tasks_as_the_real_one() -> None:
    domain = TerminalDomain()
    env = sim(domain)
    obs, info = env.reset(seed=5)
    vector = SimVectorEnv(ConstantWorldModel("empty", domain), 1, domain=domain)
    observations, infos = vector.reset(seed=5)
    assert obs == observations[0] == PROMPT
    assert info["task_id"] == infos["task_id"][0]  # reset(seed=...) picks the task by seed
    assert env.reset(seed=5)[1]["task_id"] == info["task_id"] != env.reset(seed=6)[1]["task_id"]
    if HAVE_SANDBOX:
        real = gymnasium.make("agentworld/terminal-v0")
        try:
            real_obs, real_info = real.reset(seed=5)
        finally:
            real.close()
        assert (real_obs, real_info["task_id"]) == (obs, info["task_id"])
    vector.close()
    env.close()


def test_simulated_terminal_rewards_by_default() -> None:
    domain = TerminalDomain()
    env = sim(domain)
    assert env.reward_source == "verifier"
    here = Task(id="t", domain="terminal", instruction="-", check={"cwd": "/home/agent"})
    env.reset(options={"task": here})
    _, reward, terminated, _, info = env.step("cd ~")
    assert (reward, terminated, info["verified"]) == (1.0, True, True)
    there = Task(id="u", domain="terminal", instruction="-", check={"cwd": "/home/agent/docs"})
    env.reset(options={"task": there})
    assert env.step("cd ~")[1:3] == (0.0, False)
    files = Task(id="v", domain="terminal", instruction="-", check={"exists": ["a"]})
    env.reset(options={"task": files})
    _, reward, terminated, _, info = env.step("touch a")
    assert (reward, terminated, info["verified"]) == (0.0, False, False)  # no text shows files


def test_verify_tests_what_the_text_shows() -> None:
    domain = TerminalDomain()
    task = Task(
        id="n", domain="terminal", instruction="-",
        check={"cwd": "/home/agent/docs", "output_contains": ["/home/agent/docs"]},
    )
    assert domain.verify("/home/agent/docs\nuser@sandbox:~/docs$ ", task) == (1.0, True)
    assert domain.verify("/home/agent\nuser@sandbox:~$ ", task) == (0.0, False)
    assert domain.verify("/home/agent/docs", task) is None  # no prompt: cwd unknown
    count = Task(id="c", domain="terminal", instruction="-", check={"output_regex": r"(?m)^\s*3\b"})
    assert domain.verify("3 a.txt\n[1] user@sandbox:~$ ", count) == (1.0, True)
    assert domain.verify(PROMPT, None) is None


def test_gymnasium_make_sim_v0_passes_check_env(trained_dir: Path) -> None:
    env = gymnasium.make(
        "agentworld/sim-v0", checkpoint=str(trained_dir), load_options={"max_new_tokens": 40}
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped, skip_render_check=True)
        obs, info = env.reset(seed=0)
        assert obs == PROMPT and info["task_id"]  # the card names no domain: terminal
        found = Task(id="h", domain="terminal", instruction="-",
                     check={"output_contains": ["hello.txt"]})
        env.reset(options={"task": found, "system_prompt": ""})  # short: the model is tiny
        obs, reward, terminated, truncated, info = env.step("ls")
        assert (obs, reward, terminated, truncated) == ("hello.txt", 1.0, True, False)
    finally:
        env.close()


def test_sim_v0_without_checkpoint_says_how() -> None:
    with pytest.raises(ValueError, match=r'checkpoint="runs/x/sft"'):
        gymnasium.make("agentworld/sim-v0")
