"""EnvBase: task drawing from options or np_random, step limits, the end of an episode, close."""

from __future__ import annotations

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

from agentworld.core.env_base import EnvBase
from agentworld.core.gymvec import FreeText
from agentworld.core.textenv import action_text
from agentworld.core.types import Action, Task


class Tasks:
    def sample(self, n: int, *, seed: int) -> list[Task]:
        return [Task(id=f"t{seed}", domain="count", instruction=f"reach {seed % 5 + 1}")
                for _ in range(n)]  # fmt: skip


class CountEnv(EnvBase):
    """Counts "inc" actions to the goal its task names."""

    def __init__(self, max_steps: int | None = 4) -> None:
        self.tasks, self.max_steps = Tasks(), max_steps
        self.action_space = self.observation_space = FreeText(32, min_length=0)
        self.count, self.released = 0, 0

    def start(self, task):
        self.count = 0
        return "0", {"task_id": task.id}

    def transition(self, action):
        self.count += action_text(action) == "inc"
        goal = int(self.task.instruction.split()[-1])
        return str(self.count), float(self.count == goal), self.count == goal, {}

    def release(self) -> None:
        self.released += 1


def test_env_base_draws_counts_truncates_and_closes() -> None:
    env = CountEnv()
    check_env(env, skip_render_check=True)  # Gymnasium's own checker passes
    drawn = env.reset(seed=7)[1]["task_id"]
    assert env.reset(seed=7)[1]["task_id"] == drawn  # the same seed, the same task
    given = Task(id="mine", domain="count", instruction="reach 1")
    assert env.reset(options={"task": given.model_dump()})[1]["task_id"] == "mine"  # a dict too
    assert env.step(Action(text="inc"))[1:4] == (1.0, True, False)
    with pytest.raises(RuntimeError, match="no episode is running"):
        env.step("inc")
    env.reset(options={"task": Task(id="far", domain="count", instruction="reach 9")})
    results = [env.step("wait") for _ in range(4)]
    assert [r[3] for r in results] == [False, False, False, True]  # truncated at max_steps
    assert env.done and env.steps == 4
    env.close()
    env.close()
    assert env.released == 2 and env.done
    with pytest.raises(TypeError):
        type("Half", (EnvBase,), {"start": lambda self, task: ("", {})})()  # no transition


def test_a_built_in_env_uses_it() -> None:
    from agentworld.domains.swe.env import SweEnv

    assert issubclass(SweEnv, EnvBase) and issubclass(SweEnv, gymnasium.Env)
