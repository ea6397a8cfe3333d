"""Simulated environments through the one rollout loop: a list of ``SimEnv``, a
``SimVectorEnv`` and the real toy-text env give the same episodes under an exact world model,
and ``SimEnv`` and ``SimVectorEnv`` retry and truncate unparsed answers alike (one shared
implementation, ``agentworld.sim.outcome.sample_steps``/``settle_step``)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from exact_worlds import ExactFrozenLake

from agentworld.core.plugins import get_domain
from agentworld.core.rollout import Outcome, each, rollout, text_of
from agentworld.core.types import Prediction
from agentworld.sim import SimEnv, SimVectorEnv

TO_GOAL = ["right", "right", "down", "down", "down", "right"]  # FrozenLake 4x4, 6 steps


class FirstSampleUnparsed:
    """The exact FrozenLake model, except that the first answer to each distinct request is
    cut before its observation block (unparsed); asked again, it answers in full."""

    rewards, history_window = True, 1

    def __init__(self) -> None:
        self.inner = ExactFrozenLake()
        self.seen: set[str] = set()

    def predict(
        self, requests: Sequence[list[dict[str, str]]], *, max_new_tokens: int | None = None
    ) -> list[Prediction]:
        out = []
        for messages, answer in zip(requests, self.inner.predict(requests), strict=True):
            key = json.dumps(messages)
            if key in self.seen:
                out.append(answer)
            else:
                self.seen.add(key)
                out.append(Prediction(text=answer.text[:12], observation=None))
        return out


def test_real_simulated_and_vector_envs_give_the_same_episodes() -> None:
    domain = get_domain("frozenlake-4x4")
    tasks = domain.tasks().sample(2, seed=0)
    policy = each(lambda e: TO_GOAL[e.num_steps])
    real_envs = [domain.make_env() for _ in range(2)]
    real = rollout(real_envs, policy, 10, tasks=tasks, seeds=0)
    wm = ExactFrozenLake()
    simulated = rollout(
        [SimEnv(wm, domain=domain, max_steps=10) for _ in range(2)], policy, 10,
        tasks=tasks, seeds=0,
    )
    calls = wm.calls
    vector = SimVectorEnv(wm, 2, domain=domain, tasks=tasks, max_steps=10)
    batched = rollout(vector, policy, 10, seeds=0)
    assert wm.calls - calls == 6  # one batched predict per vector step
    for r, s, v in zip(real, simulated, batched, strict=True):
        assert r.outcome is s.outcome is v.outcome is Outcome.TERMINATED
        texts = [text_of(r.initial_observation)] + [text_of(t.observation) for t in r.transitions]
        for other in (s, v):
            assert [text_of(other.initial_observation)] + [
                text_of(t.observation) for t in other.transitions
            ] == texts
            assert [t.reward for t in other.transitions] == [0.0] * 5 + [1.0]
        assert texts[-1].endswith("reward: 1\nstatus: reached the goal")
    for env in real_envs:
        env.close()
    vector.close()


@pytest.mark.parametrize(
    ("max_retries", "outcome", "steps", "failures"),
    [(1, Outcome.TERMINATED, 6, 6), (0, Outcome.MALFORMED, 1, 1)],
)
def test_sim_env_and_vector_env_retry_and_truncate_alike(
    max_retries: int, outcome: Outcome, steps: int, failures: int
) -> None:
    domain = get_domain("frozenlake-4x4")
    [task] = domain.tasks().sample(1, seed=0)
    options = {"domain": domain, "on_parse_error": "retry", "max_retries": max_retries}
    single = SimEnv(FirstSampleUnparsed(), max_steps=10, **options)
    vector = SimVectorEnv(FirstSampleUnparsed(), 1, tasks=[task], max_steps=10, **options)
    policy = each(lambda e: TO_GOAL[e.num_steps])
    [a] = rollout([single], policy, 10, tasks=[task], seeds=[0])
    [b] = rollout(vector, policy, 10, seeds=0)
    for episode, env in ((a, single), (b, vector)):
        assert episode.outcome is outcome and episode.num_steps == steps
        assert env.parse_failures == failures
        assert [int(t.info["retries"]) for t in episode.transitions] == [max_retries] * steps
    if outcome is Outcome.MALFORMED:
        assert a.transitions[0].info["truncated_reason"] == "malformed"
        assert b.transitions[0].info["truncated_reason"] == "malformed"
        assert text_of(a.observation) == text_of(b.observation) == ""
    vector.close()


def test_reset_options_start_a_simulated_episode_mid_way() -> None:
    domain = get_domain("frozenlake-4x4")
    [task] = domain.tasks().sample(1, seed=0)
    real = domain.make_env()
    [walk] = rollout([real], each(lambda e: TO_GOAL[e.num_steps]), 3, tasks=[task], seeds=[0])
    real.close()
    middle = text_of(walk.observation)  # row 1, col 2
    env = SimEnv(ExactFrozenLake(), domain=domain, max_steps=10)
    [rest] = rollout([env], each(lambda e: TO_GOAL[3 + e.num_steps]), 10, tasks=[task],
                     options=[{"initial_observation": middle}])
    assert text_of(rest.initial_observation) == middle and middle.startswith("agent: row 1, col 2")
    assert rest.outcome is Outcome.TERMINATED and rest.num_steps == 3
    assert rest.episode_return == 1.0
