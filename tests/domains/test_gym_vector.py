"""Real environments in Gymnasium's process-parallel ``AsyncVectorEnv`` (issue 35, item 4).

Their observations are free text (:class:`agentworld.core.gymvec.FreeText`): shared memory,
Gymnasium's default, used to hand back ``'000...'`` for every observation of the terminal; it
is now refused with a message naming ``shared_memory=False``, which returns each observation
exactly, with its public state."""

from __future__ import annotations

import agentworld.domains.classic  # noqa: F401 -- registers agentworld/frozenlake-4x4-v0
import gymnasium
import pytest
from agentworld.core.gymvec import FreeText
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv
from sandboxes import needs_sandbox


def test_free_text_refuses_shared_memory_and_batches_as_text() -> None:
    space = FreeText(8, min_length=0)
    with pytest.raises(ValueError, match="shared_memory=True") as err:
        AsyncVectorEnv([lambda: gymnasium.make("agentworld/frozenlake-4x4-v0")] * 2)
    assert "FreeText" in str(err.value.__cause__) and "shared_memory=False" in str(
        err.value.__cause__)
    assert "abc" in space and isinstance(space, gymnasium.spaces.Text)
    assert gymnasium.vector.utils.batch_space(space, 2) == gymnasium.spaces.Tuple((space, space))


def test_toy_text_async_equals_sync() -> None:
    make = [lambda: gymnasium.make("agentworld/frozenlake-4x4-v0")] * 2
    runs = []
    for vec in (AsyncVectorEnv(make, shared_memory=False), SyncVectorEnv(make)):
        try:
            observations, _ = vec.reset(seed=3)
            stepped = vec.step(("right", "down"))
            runs.append((observations, stepped[0], stepped[1].tolist(), stepped[2].tolist()))
        finally:
            vec.close()
    assert runs[0] == runs[1]
    assert runs[0][1][0] != runs[0][1][1] and "\n" in runs[0][1][0]  # two real boards


@needs_sandbox
def test_terminal_async_vector_env_returns_real_observations() -> None:
    vec = gymnasium.make_vec("agentworld/terminal-v0", num_envs=2, vectorization_mode="async",
                             vector_kwargs={"shared_memory": False}, max_steps=5)
    try:
        observations, infos = vec.reset(seed=7)
        assert observations == ("user@sandbox:~$ ",) * 2
        assert len(set(infos["task_id"])) == 2  # seeds 7 and 8: two tasks
        observations, _, _, _, _ = vec.step(("pwd", "mkdir d && cd d && pwd"))
        assert observations[0] == "/home/agent\nuser@sandbox:~$ "
        assert observations[1] == "/home/agent/d\nuser@sandbox:~/d$ "
        assert observations[1].state == {"cwd": "/home/agent/d", "exit_code": 0}
    finally:
        vec.close()
