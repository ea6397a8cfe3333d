"""``agentworld/sim-v0`` as Gymnasium's vector users build it (issue 35, item 4): ``make_vec``
gives the batched ``SimVectorEnv``; ``AsyncVectorEnv`` over forked workers answers (it hung:
torch's intra-op pool, started in the parent, deadlocks a forked child) with the same
observations as the in-process env; shared memory is refused with a message naming the fix."""

from __future__ import annotations

import faulthandler
from pathlib import Path

import gymnasium
import pytest
import torch
from agentworld.core.types import Task
from agentworld.sim import SimVectorEnv

PROMPT = "user@sandbox:~$ "
FOUND = Task(id="h", domain="terminal", instruction="-", check={"output_contains": ["hello.txt"]})
OBSERVATION = "hello.txt"  # what the trained_dir model predicts (tests/sim/conftest.py: ANSWER)
# A short system prompt: the tiny test model's context is 512 tokens.
KWARGS = {"load_options": {"max_new_tokens": 40}, "system_prompt": "", "task": FOUND}


def test_make_vec_builds_the_batched_sim_vector_env(trained_dir: Path) -> None:
    vec = gymnasium.make_vec("agentworld/sim-v0", num_envs=3, checkpoint=str(trained_dir),
                             load_options={"max_new_tokens": 40}, system_prompt="",
                             tasks=[FOUND] * 3)
    try:
        assert isinstance(vec.unwrapped, SimVectorEnv) and vec.num_envs == 3
        observations, _ = vec.reset(seed=0)
        assert observations == (PROMPT,) * 3
        observations, rewards, terminated, _, _ = vec.step(("ls", "ls", "ls"))
        assert observations == (OBSERVATION,) * 3
        assert rewards.tolist() == [1.0] * 3 and terminated.tolist() == [True] * 3
    finally:
        vec.close()
    with pytest.raises(ValueError, match="num_envs must be >= 1"):
        gymnasium.make_vec("agentworld/sim-v0", num_envs=0, checkpoint=str(trained_dir))


def test_async_vector_env_over_forked_workers_answers(trained_dir: Path) -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # xdist workers run on one thread; the hang needs the pool started
    torch.ones(512, 512) @ torch.ones(512, 512)
    faulthandler.dump_traceback_later(180, exit=True)  # a regression fails, it does not hang CI
    try:
        with pytest.raises(ValueError, match="shared_memory=False"):
            gymnasium.make_vec("agentworld/sim-v0", num_envs=2, vectorization_mode="async",
                               checkpoint=str(trained_dir), **KWARGS)
        vec = gymnasium.make_vec("agentworld/sim-v0", num_envs=2, vectorization_mode="async",
                                 vector_kwargs={"shared_memory": False, "context": "fork"},
                                 checkpoint=str(trained_dir), **KWARGS)
        try:
            assert vec.reset(seed=0)[0] == (PROMPT, PROMPT)
            observations, rewards, terminated, truncated, _ = vec.step(("ls", "ls"))
            assert observations == (OBSERVATION, OBSERVATION)
            assert rewards.tolist() == [1.0, 1.0] and terminated.tolist() == [True, True]
            assert vec.call("parse_failures") == (0, 0)
        finally:
            vec.close()
    finally:
        faulthandler.cancel_dump_traceback_later()
        torch.set_num_threads(threads)
    single = gymnasium.make("agentworld/sim-v0", checkpoint=str(trained_dir), **KWARGS)
    try:
        single.reset(seed=0)
        assert single.step("ls")[0] == OBSERVATION  # the same as in-process
    finally:
        single.close()
