"""SimVectorEnv: Gymnasium VectorEnv semantics (NEXT_STEP autoreset), one predict per step."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from agentworld.core.builtins import ConstantWorldModel
from agentworld.core.types import Prediction, Task
from agentworld.sim import SimEnv, SimVectorEnv, Simulator
from agentworld.sim.backends.hf import HFBackend
from agentworld.sim.openenv.envs import ServedEnv


class Counting:
    """A real world model wrapped to record the batch size of every predict call."""

    def __init__(self, inner: object):
        self.inner = inner
        self.calls: list[int] = []

    def predict(
        self, requests: Sequence[list[dict[str, str]]], *, max_new_tokens: int | None = None, **kw
    ) -> list[Prediction]:
        self.calls.append(len(requests))
        return self.inner.predict(requests, max_new_tokens=max_new_tokens, **kw)  # type: ignore[attr-defined]


class Sampler:
    def sample(self, n: int, *, seed: int) -> list[Task]:
        return [
            Task(id=f"task-{seed}-{k}", domain="fake", instruction=f"goal {seed}") for k in range(n)
        ]


class FakeDomain:
    name, version = "fake", "0"

    def system_prompt(self, task: Task | None) -> str:
        return f"You simulate the fake env for {task.id if task else 'free play'}."

    def tasks(self) -> Sampler:
        return Sampler()


@pytest.fixture(scope="module")
def trained_wm(trained_dir: Path):
    return HFBackend().load(str(trained_dir), max_new_tokens=40)


def test_batched_steps_and_next_step_autoreset(trained_wm) -> None:
    wm = Counting(trained_wm)
    envs = SimVectorEnv(
        wm,
        3,
        initial_observation=["$ a", "$ b", "$ c"],
        max_steps=2,
        is_terminal=lambda action, observation: action == "exit",
    )
    assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert isinstance(envs.observation_space, gym.spaces.Tuple) and len(envs.action_space) == 3

    obs, infos = envs.reset(seed=0)
    assert obs == ("$ a", "$ b", "$ c") and obs in envs.observation_space
    assert infos["_episode_id"].tolist() == [True] * 3 and len(set(infos["episode_id"])) == 3
    first_ids = envs.episode_ids()

    obs, rewards, terminations, truncations, infos = envs.step(("ls", "exit", "pwd"))
    assert obs == ("hello.txt",) * 3
    assert rewards.dtype == np.float64 and rewards.tolist() == [0.0, 0.0, 0.0]
    assert terminations.dtype == np.bool_ and terminations.tolist() == [False, True, False]
    assert truncations.tolist() == [False, False, False]
    assert infos["parsed"].tolist() == [True] * 3 and infos["turn"].tolist() == [0, 0, 0]
    assert all(raw.endswith("</predicted_observation>") for raw in infos["raw"])
    assert wm.calls == [3]  # three episodes, one predict call

    # env 1 terminated: its action is ignored and it resets; envs 0 and 2 reach max_steps.
    obs, rewards, terminations, truncations, infos = envs.step(("ls", "IGNORED", "ls"))
    assert obs == ("hello.txt", "$ b", "hello.txt")
    assert terminations.tolist() == [False, False, False]
    assert truncations.tolist() == [True, False, True]
    assert infos["_raw"].tolist() == [True, False, True]
    assert infos["_task_id"].tolist() == [False, True, False]
    assert infos["_truncated_reason"].tolist() == [True, False, True]
    assert infos["truncated_reason"][0] == "max_steps"
    assert wm.calls == [3, 2]
    new_ids = envs.episode_ids()
    assert new_ids[1] != first_ids[1] and new_ids[0] == first_ids[0]
    assert len(envs.simulator) == 3  # the terminated episode was closed
    assert [m["role"] for m in envs.simulator.messages(new_ids[1])] == ["system"]
    assert "$ b" in envs.simulator.messages(new_ids[1])[0]["content"]

    obs, _, terminations, truncations, infos = envs.step(("IGNORED", "cat x", "IGNORED"))
    assert obs == ("$ a", "hello.txt", "$ c")
    assert not terminations.any() and not truncations.any()
    assert wm.calls == [3, 2, 1]
    assert infos["turn"][1] == 0 and infos["_turn"].tolist() == [False, True, False]

    with pytest.raises(ValueError):
        envs.step(("ls",))
    envs.close()
    assert len(envs.simulator) == 0 and envs.closed


def test_matches_sync_vector_env_of_sim_envs(trained_wm) -> None:
    """Same observations, rewards, flags as Gymnasium's SyncVectorEnv over SimEnv (N predicts)."""
    starts = ["$ a", "$ b"]
    ours = SimVectorEnv(trained_wm, 2, initial_observation=starts, max_steps=2)
    reference = gym.vector.SyncVectorEnv(
        [lambda s=s: SimEnv(trained_wm, initial_observation=s, max_steps=2) for s in starts],
        autoreset_mode=AutoresetMode.NEXT_STEP,
    )
    assert ours.reset(seed=1)[0] == reference.reset(seed=1)[0]
    for t in range(5):
        actions = (f"ls {t}", f"cat {t}")
        mine, theirs = ours.step(actions), reference.step(actions)
        assert mine[0] == theirs[0]
        for a, b in zip(mine[1:4], theirs[1:4], strict=True):
            np.testing.assert_array_equal(a, b)
        none = np.zeros(2, dtype=np.bool_)
        for key in ("_truncated_reason", "_parsed", "_task_id"):  # same infos present
            assert np.array_equal(mine[4].get(key, none), theirs[4].get(key, none))
    ours.close()
    reference.close()


def test_malformed_answers_truncate_and_gymnasium_statistics(qwen3_dir: Path) -> None:
    wm = HFBackend().load(str(qwen3_dir), max_new_tokens=4)  # random weights: no observation block
    envs = RecordEpisodeStatistics(SimVectorEnv(wm, 2, initial_observation="$ "))
    envs.reset(seed=0)
    obs, rewards, terminations, truncations, infos = envs.step(["ls", "pwd"])
    assert obs == ("", "") and truncations.tolist() == [True, True] and not terminations.any()
    assert infos["truncated_reason"].tolist() == ["malformed", "malformed"]
    assert infos["parsed"].tolist() == [False, False] and infos["num_tokens"].tolist() == [4, 4]
    assert infos["episode"]["l"].tolist() == [1, 1] and infos["_episode"].tolist() == [True, True]
    obs, *_ = envs.step(["x", "y"])  # autoreset step
    assert obs == ("$ ", "$ ")
    envs.close()


def test_domain_tasks_seeding_and_reset_mask() -> None:
    sim = Simulator(ConstantWorldModel("copy-previous"))
    envs = SimVectorEnv(
        sim, 3, domain=FakeDomain(), initial_observation=lambda task: f"start of {task.id}"
    )
    obs, infos = envs.reset(seed=5)
    tasks = list(infos["task_id"])
    assert len(set(tasks)) == 3 and obs == tuple(f"start of {t}" for t in tasks)
    system = sim.messages(envs.episode_ids()[0])[0]["content"]
    assert f"fake env for {tasks[0]}" in system and "goal" in system
    assert list(envs.reset(seed=5)[1]["task_id"]) == tasks  # same seed, same tasks
    assert list(envs.reset(seed=6)[1]["task_id"]) != tasks

    before = envs.episode_ids()
    obs, infos = envs.reset(options={"reset_mask": np.array([False, True, False])})
    after = envs.episode_ids()
    assert after[0] == before[0] and after[2] == before[2] and after[1] != before[1]
    assert infos["_episode_id"].tolist() == [False, True, False]
    assert obs[1] == f"start of {infos['task_id'][1]}" and len(sim) == 3
    with pytest.raises(ValueError):
        envs.reset(options={"reset_mask": np.array([False, False, False])})
    with pytest.raises(ValueError):
        SimVectorEnv(sim, 2, tasks=[Task(id="t", domain="fake", instruction="x")])
    envs.close()


def test_given_tasks_and_prompts_per_sub_env() -> None:
    sim = Simulator(ConstantWorldModel("copy-previous"))
    tasks = [Task(id=f"t{i}", domain="fake", instruction=f"do {i}") for i in range(2)]
    envs = SimVectorEnv(sim, 2, tasks=tasks, system_prompt=["prompt A", "prompt B"])
    obs, infos = envs.reset()
    assert infos["task_id"].tolist() == ["t0", "t1"]
    contents = [sim.messages(e)[0]["content"] for e in envs.episode_ids()]
    assert contents[0].startswith("prompt A") and "do 0" in contents[0]
    assert contents[1].startswith("prompt B") and "do 1" in contents[1]
    with pytest.raises(RuntimeError):
        SimVectorEnv(sim, 1).step(["ls"])
    envs.close()


def test_an_action_reaches_the_world_model_as_its_text() -> None:
    """``step([Action(text="look")])`` sends ``look``, not the Action's repr, to the world model
    (the simulator's history is what the world model reads); so do ``SimEnv.step`` and its
    ``render``, and a plain string still works."""
    from agentworld.core.types import Action

    vec = SimVectorEnv(ConstantWorldModel("copy-previous"), 2, initial_observation="room")
    vec.reset(seed=0)
    vec.step([Action(text="look"), "open door"])
    sent = [vec.simulator.messages(e)[-2]["content"] for e in vec.episode_ids()]
    assert sent == ["look", "open door"]
    env = SimEnv(ConstantWorldModel("copy-previous"), initial_observation="room",
                 render_mode="ansi")  # fmt: skip
    env.reset(seed=0)
    env.step(Action(text="look"))
    assert env.simulator.messages(env.episode_id)[-2]["content"] == "look"
    assert ">>> look\n" in env.render() and "name=None" not in env.render()
    served = ServedEnv(env=env, domain="room", simulated=True)
    served.reset(seed=1)
    served.step(Action(text="listen"))
    served.step("wait")
    assert [m["content"] for m in env.simulator.messages(env.episode_id)[1::2]] == [
        "listen", "wait"]
    simulator = Simulator(ConstantWorldModel("copy-previous"))
    episode = simulator.open_sync("You simulate a room.", "room", None)
    [(observation, _)] = simulator.step_many([(episode, Action(text="look"))])
    assert simulator.messages(episode)[-2]["content"] == "look" and observation == "room"
