"""Real terminal episodes of one fixed command script, for tests of the retrieval index and the
``nearest`` baseline (the same script after every reset, so transitions recur across episodes)."""

from __future__ import annotations

from collections.abc import Sequence

from agentworld.core.types import Action, Episode, Observation, Step
from agentworld.domains.terminal.domain import TerminalDomain


def script_episodes(script: Sequence[str], seeds: Sequence[int], prefix: str, *,
                    state: bool = False) -> list[Episode]:
    """One episode per seed: the seed's sampled task, then ``script`` typed in the real
    sandboxed terminal. Ids are ``f"{prefix}{i}"``; with ``state`` each observation keeps the
    structured state the domain's rationales read."""
    domain = TerminalDomain()
    env = domain.make_env()
    out = []
    try:
        for i, seed in enumerate(seeds):
            task = domain.tasks().sample(1, seed=seed)[0]
            first, _ = env.reset(seed=seed, options={"task": task})
            steps = []
            for command in script:
                observation, *_ = env.step(command)
                steps.append(Step(action=Action(text=command), observation=Observation(
                    text=observation.text, state=observation.state if state else None)))
            out.append(Episode(
                id=f"{prefix}{i}", domain="terminal", task=task,
                system_prompt=domain.system_prompt(task),
                initial_observation=Observation(text=domain.initial_observation(task),
                                                state=first.state if state else None),
                steps=steps))
    finally:
        env.close()
    return out
