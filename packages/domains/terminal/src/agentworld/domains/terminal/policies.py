"""Collection policies of the terminal domain.

Both implement :class:`agentworld.core.protocols.Policy` and are
deterministic given a seed: pass ``seed`` to the constructor, or call
``reset(seed)`` before an episode (the core collector does when the method
exists). Within an episode, ``act(task, history)`` depends only on the
policy's random state and ``history`` (initial observation first, then
alternating actions and observations); it returns ``None`` to end.

* ``scripted`` (:class:`ScriptedExpert`): looks around, solves the task,
  sometimes verifies; 2-7 steps.
* ``random`` (:class:`RandomPolicy`): plausible random commands with some
  mistakes; 4-12 steps.
"""

from __future__ import annotations

from agentworld.domains.terminal.expert import ScriptedExpert
from agentworld.domains.terminal.random_policy import RandomPolicy


def make_policies(seed: int = 0) -> dict[str, ScriptedExpert | RandomPolicy]:
    """Fresh policies by name: ``{"scripted": ..., "random": ...}``."""
    return {"scripted": ScriptedExpert(seed), "random": RandomPolicy(seed)}


__all__ = ["RandomPolicy", "ScriptedExpert", "make_policies"]
