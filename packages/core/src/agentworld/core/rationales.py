"""Domain rationales: one short text per transition from a domain's own ``explain``.

An :class:`~agentworld.core.protocols.ExplainingDomain` writes
``explain(step, previous_state)`` from the real transition and the structured state before
it; SFT with ``reasoning="domain"`` puts it in ``<think>`` before the observation, and
``agentworld convert --to messages --reasoning`` writes it into chat rows. The domain is
found by name through the plugin manager. A domain whose ``explain`` (and ``explain_text``) takes a
``history`` keyword also gets the episode's earlier steps, ``(action text, observation text
before it)`` oldest first (:func:`step_history`, :func:`message_history`): the same text a
simulator has, so that it can write the same rationale. Rationales never contain the contract's tags:
``<think>``, ``</think>`` and the observation tags are removed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentworld.core import plugins
from agentworld.core.formats import (
    OBS_CLOSE,
    OBS_OPEN,
    THINK_CLOSE,
    THINK_OPEN,
    Message,
    previous_observation,
)
from agentworld.core.domain_base import domain_hooks
from agentworld.core.types import Episode

Rationales = list[list[str]]
"""``rationales[i][t]``: the rationale of ``episodes[i].steps[t]``."""

TAGS = (THINK_OPEN, THINK_CLOSE, OBS_OPEN, OBS_CLOSE)


def clean(text: str) -> str:
    """``text`` without the contract's tags (:data:`TAGS`), whitespace-stripped."""
    for tag in TAGS:
        text = text.replace(tag, "")
    return text.strip()


def explainer(name: str) -> Callable[..., str | None]:
    """The ``explain`` of domain plugin ``name``.

    Raises:
        agentworld.core.plugins.UnknownPluginError: the domain is not installed.
        ValueError: the domain writes no rationales (its ``has_rationales`` is false).
    """
    domain = domain_hooks(plugins.get_domain(name))
    if not domain.has_rationales:
        raise ValueError(
            f"domain {name!r} has no explain(step, previous_state, history) to write rationales; "
            "use reasoning='teacher' or reasoning='none'"
        )
    return domain.explain


def step_history(episode: Episode, turn: int) -> list[tuple[str, str]]:
    """``(action text, observation text before it)`` of ``episode.steps[:turn]``, oldest first."""
    before = [episode.initial_observation, *(s.observation for s in episode.steps)]
    return [(s.action.text, before[t].text) for t, s in enumerate(episode.steps[:turn])]


def message_history(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """:func:`step_history` from a chat ``[system, (user, assistant) * T, user]``: the ``T``
    earlier actions (user messages), each with the observation before it
    (:func:`agentworld.core.formats.previous_observation`)."""
    return [
        (m["content"], previous_observation(list(messages[:i])))
        for i, m in enumerate(messages[:-1])
        if m["role"] == "user"
    ]


def check_domain(episodes: Sequence[Episode], domain: str | None = None) -> None:
    """Fail early when a domain named by ``domain`` or the episodes cannot explain steps.

    Raises:
        agentworld.core.plugins.UnknownPluginError: the domain is not installed.
        ValueError: the domain has no ``explain``.
    """
    for name in {domain} if domain else {e.domain for e in episodes}:
        explainer(name)


def domain_rationales(episodes: Sequence[Episode], domain: str | None = None) -> Rationales:
    """Rationales from each episode's domain plugin (or ``domain``),
    ``explain(step, previous_state, history=...)``.

    ``previous_state`` is the structured state before the step: the initial
    observation's for step 0, else the previous step's observation's.

    Raises:
        agentworld.core.plugins.UnknownPluginError: the domain is not installed.
        ValueError: the domain has no ``explain``, or it returned an empty rationale.
    """
    out: Rationales = []
    for episode in episodes:
        explain = explainer(domain or episode.domain)
        previous = episode.initial_observation.state
        rows = []
        for t, step in enumerate(episode.steps):
            text = clean(explain(step, previous, history=step_history(episode, t)) or "")
            if not text:
                raise ValueError(
                    f"explain() gave an empty rationale for episode {episode.id} turn {t}"
                )
            rows.append(text)
            previous = step.observation.state
        out.append(rows)
    return out
