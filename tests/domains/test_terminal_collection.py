"""Tasks, policies and whole episodes in the real terminal environment."""

from __future__ import annotations

from collections import Counter

from agentworld.core.protocols import Policy
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.terminal.domain import TerminalDomain
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.expert import ScriptedExpert
from agentworld.domains.terminal.prompt import split_prompt
from agentworld.domains.terminal.random_policy import RandomPolicy
from agentworld.domains.terminal.tasks import KINDS, TerminalTaskSampler
from sandboxes import needs_sandbox


def rollout(env: TerminalEnv, policy, task: Task, seed: int):
    policy.reset(seed)
    obs, _ = env.reset(seed=seed, options={"task": task})
    history: list[Observation | Action] = [obs]
    reward, terminated = 0.0, False
    while not terminated:
        action = policy.act(task, history)
        if action is None:
            break
        obs, reward, terminated, truncated, info = env.step(action)
        history += [action, obs]
        if truncated:
            break
    return history, reward, terminated


def test_sampler_is_seeded_and_varied():
    sampler = TerminalTaskSampler()
    a, b = sampler.sample(18, seed=1), sampler.sample(18, seed=1)
    assert [t.model_dump() for t in a] == [t.model_dump() for t in b]
    c = sampler.sample(18, seed=2)
    assert [t.instruction for t in a] != [t.instruction for t in c]
    assert set(t.kind for t in a) == set(KINDS)
    assert len({t.id for t in a}) == 18
    names = {p for t in sampler.sample(40, seed=3) for p in t.setup["files"]}
    assert len(names) > 100
    for t in a:
        assert 4 <= len(t.setup["files"]) <= 8 and t.check and t.domain == "terminal"
        assert all(1 <= c.count("\n") <= 5 for c in t.setup["files"].values())


def test_policies_are_deterministic_without_env():
    task = TerminalTaskSampler().sample(1, seed=5)[0]
    obs = Observation(text="user@sandbox:~$ ")
    for cls in (ScriptedExpert, RandomPolicy):
        p, q = cls(), cls()
        assert isinstance(p, Policy)
        p.reset(11)
        q.reset(11)
        assert p.act(task, [obs]) == q.act(task, [obs])


@needs_sandbox
def test_scripted_expert_solves_tasks():
    env, expert = TerminalEnv(), ScriptedExpert()
    failures = []
    try:
        for i, task in enumerate(TerminalTaskSampler().sample(20, seed=123)):
            history, reward, terminated = rollout(env, expert, task, seed=i)
            if not (reward == 1.0 and terminated):
                failures.append((task.instruction, [h.text for h in history]))
            assert 1 <= len(history) // 2 <= 8
    finally:
        env.close()
    assert failures == []


@needs_sandbox
def test_the_expert_without_exploring_runs_only_the_task_commands():
    env = TerminalEnv()
    kinds = ("create", "delete", "inspect", "navigate", "copy", "count")
    try:
        for i, task in enumerate(TerminalTaskSampler(kinds).sample(18, seed=5)):
            explorer, direct = ScriptedExpert(), ScriptedExpert(explore=False)
            long, _, _ = rollout(env, explorer, task, seed=i)
            history, reward, terminated = rollout(env, direct, task, seed=i)
            assert (reward, terminated) == (1.0, True), [h.text for h in history]
            commands = [h.text for h in history[1::2]]
            assert len(commands) < len(long) // 2, (commands, [h.text for h in long[1::2]])
    finally:
        env.close()


@needs_sandbox
def test_same_task_and_actions_give_same_observations():
    tasks = TerminalTaskSampler().sample(4, seed=9)
    runs = []
    for _ in range(2):
        env = TerminalEnv()
        try:
            runs.append(
                [
                    [
                        (h.text, h.state) if isinstance(h, Observation) else h.text
                        for h in rollout(env, ScriptedExpert(), t, seed=3)[0]
                    ]
                    for t in tasks
                ]
            )
        finally:
            env.close()
    assert runs[0] == runs[1]


@needs_sandbox
def test_random_policy_mixes_commands_and_never_breaks_env():
    domain = TerminalDomain()
    env, policy = TerminalEnv(), RandomPolicy()
    types, steps = Counter(), 0
    try:
        for i, task in enumerate(TerminalTaskSampler().sample(10, seed=77)):
            history, _, _ = rollout(env, policy, task, seed=i)
            actions = history[1::2]
            assert 1 <= len(actions) <= 12
            for action, obs in zip(actions, history[2::2], strict=True):
                types[domain.action_type(action)] += 1
                _, prompt = split_prompt(obs.text)
                assert prompt is not None, obs.text
                steps += 1
    finally:
        env.close()
    assert steps >= 40 and len(types) >= 7, types
