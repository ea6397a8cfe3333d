"""Shared fixtures: small hand-made episodes."""

from __future__ import annotations

import pytest

from agentworld.core.types import Action, Episode, Observation, Step, Task


def make_episode(n_steps: int = 3, episode_id: str = "ep0") -> Episode:
    """A terminal-like episode: ``echo k`` prints ``k``, ``true`` prints nothing."""
    prompt = "user@sandbox:~$ "
    steps = []
    for k in range(n_steps):
        action = f"echo {k}" if k % 2 == 0 else "true"
        text = f"{k}\n{prompt}" if k % 2 == 0 else prompt
        steps.append(Step(action=Action(text=action), observation=Observation(text=text)))
    return Episode(
        id=episode_id,
        domain="terminal",
        task=Task(id="t0", domain="terminal", instruction="print numbers", kind="inspect"),
        system_prompt="You simulate a bash terminal.",
        initial_observation=Observation(text=prompt),
        steps=steps,
        metadata={"policy": "scripted", "seed": 0, "source": "test"},
    )


@pytest.fixture
def episodes() -> list[Episode]:
    return [make_episode(3, "ep0"), make_episode(4, "ep1"), make_episode(1, "ep2")]
