"""The one rollout loop (``agentworld.core.rollout``) on real environments: real bash in the
terminal sandbox, the real Gymnasium toy-text games, and Gymnasium's own ``SyncVectorEnv``."""

from __future__ import annotations

import gymnasium
import pytest
from agentworld.core.collect import recorded
from agentworld.core.textenv import TextActions
from agentworld.core.rollout import (
    Outcome,
    each,
    rollout,
    start_episode,
    step_episode,
    text_of,
)
from agentworld.core.types import Action, Observation
from agentworld.core.vector_rollout import VectorRollout
from agentworld.domains.classic.env import ClassicEnv
from agentworld.domains.terminal.domain import TerminalDomain
from sandboxes import needs_sandbox

PROMPT = "user@sandbox:~$ "
# FrozenLake 4x4 (non-slippery): S at (0, 0), G at (3, 3), a hole at (3, 0).
TO_GOAL = ["right", "right", "down", "down", "down", "right"]


def scripted(commands: list[list[str]]):
    """Environment ``i`` plays ``commands[i]`` in order, then stops (``None``)."""
    return each(lambda e: commands[e.index][e.num_steps] if e.num_steps < len(commands[e.index])
                else None)


@needs_sandbox
def test_terminal_episodes_step_in_lockstep_with_real_bash() -> None:
    domain = TerminalDomain()
    envs = [domain.make_env() for _ in range(2)]
    tasks = domain.tasks().sample(2, seed=0)
    seen: list[tuple[int, str]] = []
    try:
        episodes = rollout(
            envs,
            scripted([["echo hello > a.txt", "cat a.txt", "ls a.txt"], ["echo $((6*7))", "false"]]),
            3,
            tasks=tasks,
            seeds=[1, 2],
            record=recorded,
            on_step=lambda e, t: seen.append((e.index, t.action)),
            workers=2,
        )
    finally:
        for env in envs:
            env.close()
    first, second = episodes
    assert first.outcome is Outcome.MAX_STEPS and first.num_steps == 3
    assert second.outcome is Outcome.STOPPED and second.num_steps == 2
    assert first.task == tasks[0] and first.seed == 1
    assert first.reset_info["task_id"] == tasks[0].id
    assert text_of(first.initial_observation) == PROMPT
    assert [t.observation.text for t in first.transitions] == [
        PROMPT, f"hello\n{PROMPT}", f"a.txt\n{PROMPT}"
    ]
    assert [t.observation.text for t in second.transitions] == [f"42\n{PROMPT}", f"[1] {PROMPT}"]
    assert second.transitions[1].info["exit_code"] == 1
    # recorded: the privileged file snapshot the agent never sees
    assert isinstance(first.observation, Observation) and "a.txt" in first.observation.state["files"]
    assert first.history[1:3] == ["echo hello > a.txt", first.transitions[0].observation]
    assert seen == [(0, "echo hello > a.txt"), (1, "echo $((6*7))"), (0, "cat a.txt"),
                    (1, "false"), (0, "ls a.txt")]


@needs_sandbox
def test_terminal_task_solved_terminates_with_reward() -> None:
    domain = TerminalDomain()
    [task] = domain.tasks().sample(1, seed=0)
    assert task.instruction == "Rename tmp_files/agenda.log to ideas_59.log (same directory)."
    with domain.make_env() as env:
        [episode] = rollout(
            [env], scripted([["ls", "mv tmp_files/agenda.log tmp_files/ideas_59.log", "ls"]]),
            5, tasks=[task], seeds=[0],
        )
    assert episode.outcome is Outcome.TERMINATED and episode.num_steps == 2
    assert [t.reward for t in episode.transitions] == [0.0, 1.0]
    assert episode.episode_return == 1.0 and episode.transitions[-1].info["success"] is True


def test_toy_text_goal_and_max_steps() -> None:
    envs = [ClassicEnv("frozenlake-4x4") for _ in range(3)]
    episodes = rollout(envs[:2], each(lambda e: TO_GOAL[e.num_steps]), 10, seeds=0)
    for episode in episodes:
        assert episode.outcome is Outcome.TERMINATED
        assert [t.reward for t in episode.transitions] == [0.0] * 5 + [1.0]
        assert text_of(episode.observation).endswith("reward: 1\nstatus: reached the goal")
        assert episode.observation.state["s"] == 15
    [cut] = rollout(envs[2:], each(lambda e: "left"), 4, seeds=[5])
    assert cut.outcome is Outcome.MAX_STEPS and cut.num_steps == 4
    assert {t.observation.state["s"] for t in cut.transitions} == {0}


def test_toy_text_invalid_action_and_truncation_by_the_env() -> None:
    env = ClassicEnv("taxi")
    [episode] = rollout([env], each(lambda e: "fly"), 300, seeds=[3])
    assert episode.outcome is Outcome.TRUNCATED  # the registered TimeLimit: 200 steps
    assert episode.num_steps == 200 and episode.episode_return == 0.0
    assert text_of(episode.transitions[0].observation).startswith("invalid action: fly; valid:")


def test_vector_env_gives_the_same_episodes_as_a_list_of_envs() -> None:
    policy = each(lambda e: ["south", "north", "east", "pickup"][e.num_steps % 4])
    listed = rollout([ClassicEnv("taxi") for _ in range(2)], policy, 6, seeds=7)
    vector = gymnasium.vector.SyncVectorEnv([lambda: ClassicEnv("taxi") for _ in range(2)])
    batched = rollout(vector, policy, 6, seeds=7)
    vector.close()
    for a, b in zip(listed, batched, strict=True):
        assert b.outcome is a.outcome is Outcome.MAX_STEPS
        assert [text_of(t.observation) for t in a.transitions] == [
            text_of(t.observation) for t in b.transitions
        ]
        assert [t.reward for t in b.transitions] == [-1.0, -1.0, -1.0, -10.0, -1.0, -1.0]


def test_vector_rollout_streams_episodes_across_calls() -> None:
    # "down" from the start: frozen, frozen, then the hole at (3, 0): 3 steps, reward 0
    vector = gymnasium.vector.SyncVectorEnv(
        [lambda: ClassicEnv("frozenlake-4x4") for _ in range(2)]
    )
    stream = VectorRollout(vector, seed=0)
    first = stream.run(each(lambda e: "down"), 3)
    assert len(first) == 4 and stream.num_episodes == 4 and stream.num_steps == 12
    assert [e.index for e in first] == [0, 1, 0, 1]
    for episode in first:
        assert episode.outcome is Outcome.TERMINATED and episode.num_steps == 3
        assert episode.observation.state["s"] == 12 and text_of(episode.initial_observation)
    more = stream.run(each(lambda e: "down"), 1)
    assert len(more) == 2 and stream.num_episodes == 6
    vector.close()


def test_one_step_at_a_time_for_an_outside_loop() -> None:
    env = ClassicEnv("frozenlake-4x4")
    episode = start_episode(env, seed=0)
    for action in TO_GOAL[:3]:
        step_episode(env, episode, Action(text=action), max_steps=3)
    assert episode.outcome is Outcome.MAX_STEPS and episode.observation.state["s"] == 6
    with pytest.raises(RuntimeError, match="has ended"):
        step_episode(env, episode, Action(text="down"))


class StringOnly(gymnasium.Env):
    """A Gymnasium ``Text``-space env that takes ``str`` actions only (as third-party ones do)."""

    observation_space = action_space = gymnasium.spaces.Text(16)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "start", {}

    def step(self, action):
        if not isinstance(action, str):
            raise TypeError(f"expected str, got {type(action).__name__}")
        return action.upper(), 1.0, action == "bye", False, {}

    def close(self):
        pass


def test_a_text_space_env_takes_actions_through_the_one_adapter() -> None:
    env = TextActions(StringOnly())
    [run] = rollout([env], each(lambda e: Action(text="hi" if e.num_steps == 0 else "bye")), 5)
    assert [text_of(t.observation) for t in run.transitions] == ["HI", "BYE"]
    assert run.outcome is Outcome.TERMINATED and env.privileged_state() is None
    with pytest.raises(TypeError, match="takes an Action"):
        env.step("raw text")
    assert isinstance(env, gymnasium.ActionWrapper) and env.action_space == env.env.action_space


def test_bad_arguments_are_named() -> None:
    envs = [ClassicEnv("frozenlake-4x4") for _ in range(2)]
    with pytest.raises(ValueError, match="max_steps must be >= 1"):
        rollout(envs, each(lambda e: "down"), 0)
    with pytest.raises(ValueError, match="seeds needs 2 items"):
        rollout(envs, each(lambda e: "down"), 3, seeds=[1])
    with pytest.raises(ValueError, match="returned 1 actions for 2 episodes"):
        rollout(envs, lambda episodes: ["down"], 3)
