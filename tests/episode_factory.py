"""``make_episode``: a small terminal-like episode for tests, importable by name from any test
folder (a ``from conftest import`` finds the nearest folder's conftest first under xdist)."""

from __future__ import annotations

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
