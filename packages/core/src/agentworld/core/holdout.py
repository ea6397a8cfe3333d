"""Out-of-distribution hold-out: whole task families and command families that no training
split sees.

An episode is *out of distribution* when its task's kind (``Task.kind``) is one of the
held-out task kinds, or when any of its actions runs a held-out command family. Command
families come from the domain's ``command_families(action) -> set[str]`` hook when it has one
(the terminal domain: every command a command line runs, e.g. ``{"seq", "paste", "bc"}``),
else from ``domain.action_type(action)``, else the action's tool name. The collect stage
carves these episodes out *before* the train / held-out split
(:func:`agentworld.core.collect.split`), so the in-distribution held-out set and the training
set never contain them, and evaluates on them separately.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agentworld.core.domain_base import domain_hooks
from agentworld.core.protocols import KindedTaskSampler
from agentworld.core.types import Action, Episode


def action_families(action: Action, domain: Any = None) -> set[str]:
    """The command families of one action (see the module docstring)."""
    if domain is None:
        return {action.name} if action.name else set()
    return set(domain_hooks(domain).command_families(action))


def is_out_of_distribution(
    episode: Episode, task_kinds: Iterable[str], commands: Iterable[str], domain: Any = None
) -> bool:
    """Whether ``episode`` has a held-out task kind or runs a held-out command family."""
    kinds, held = set(task_kinds), set(commands)
    if episode.task is not None and episode.task.kind in kinds:
        return True
    return bool(held) and any(action_families(s.action, domain) & held for s in episode.steps)


def split_out_of_distribution(
    episodes: Sequence[Episode],
    task_kinds: Iterable[str] = (),
    commands: Iterable[str] = (),
    domain: Any = None,
) -> tuple[list[Episode], list[Episode]]:
    """``(in_distribution, out_of_distribution)`` episodes, each in the input order.

    Args:
        episodes: Collected episodes.
        task_kinds: Held-out task kinds (``Task.kind``).
        commands: Held-out command families (see :func:`action_families`).
        domain: The episodes' domain, for its ``command_families`` / ``action_type`` hooks.
    """
    kinds, held = list(task_kinds), list(commands)
    inside, outside = [], []
    for episode in episodes:
        ood = is_out_of_distribution(episode, kinds, held, domain)
        (outside if ood else inside).append(episode)
    return inside, outside


def check_task_kinds(task_kinds: Iterable[str], sampler: Any) -> None:
    """Raise when a held-out task kind is not one the domain's task sampler draws.

    Raises:
        ValueError: names the unknown kinds and the sampler's kinds (``sampler.kinds``);
            nothing is checked when the sampler does not list its kinds.
    """
    if not isinstance(sampler, KindedTaskSampler):
        return
    known = list(sampler.kinds)
    unknown = sorted(set(task_kinds) - set(known))
    if unknown:
        raise ValueError(
            f"[collect] ood_task_kinds {unknown} are not task kinds of this domain; "
            f"valid: {', '.join(known)}"
        )
