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
  mistakes, and session commands that make state and read it back; 4-12 steps.
* ``real`` (:class:`RealPolicy`): command lines from real manuals' examples (GNU info, Debian
  man pages), run on excerpts of real files (:mod:`agentworld.domains.terminal.real_policy`);
  its task's kind is the source, so whole sources can be held out.
* ``handwritten`` (:class:`HandwrittenPolicy`): replays hand-written realistic sessions, each
  with its own files (an evaluation set, never trained on;
  :mod:`agentworld.domains.terminal.handwritten`).
* ``long`` (:class:`LongSessionPolicy`): the hand-written sessions chained into sessions of 30+
  commands, for fidelity by turn index (an evaluation set;
  :mod:`agentworld.domains.terminal.long_sessions`).
* ``llm`` (:class:`LLMPolicy`): a chat model behind any OpenAI-compatible
  endpoint (``AGENTWORLD_LLM_BASE_URL``, ``AGENTWORLD_LLM_MODEL``); at most 12 steps. Offered
  only when ``AGENTWORLD_LLM_BASE_URL`` is set: there is no default endpoint to send
  requests (and keys) to.
"""

from __future__ import annotations

from agentworld.domains.terminal.expert import ScriptedExpert
from agentworld.domains.terminal.handwritten import HandwrittenPolicy
from agentworld.domains.terminal.llm_policy import LLMPolicy, endpoint
from agentworld.domains.terminal.long_sessions import LongSessionPolicy
from agentworld.domains.terminal.random_policy import RandomPolicy
from agentworld.domains.terminal.real_policy import RealPolicy


Policy = ScriptedExpert | RandomPolicy | RealPolicy | HandwrittenPolicy | LongSessionPolicy | LLMPolicy


def make_policies(seed: int = 0) -> dict[str, Policy]:
    """Fresh policies by name, those that can run here: ``{"scripted", "random", "real",
    "handwritten", "long"}``,
    and ``"llm"`` when ``$AGENTWORLD_LLM_BASE_URL`` names its endpoint
    (:func:`~agentworld.domains.terminal.llm_policy.endpoint`; it is contacted only when the
    policy acts)."""
    out: dict[str, Policy] = {
        "scripted": ScriptedExpert(seed), "random": RandomPolicy(seed),
        "real": RealPolicy(seed), "handwritten": HandwrittenPolicy(seed),
        "long": LongSessionPolicy(seed)}
    if endpoint() is not None:
        out["llm"] = LLMPolicy(seed)
    return out


__all__ = ["HandwrittenPolicy", "LLMPolicy", "LongSessionPolicy", "RandomPolicy", "RealPolicy", "ScriptedExpert", "make_policies"]
