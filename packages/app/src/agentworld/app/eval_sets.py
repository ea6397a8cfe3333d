"""Evaluation sets and the realistic hold-out: real sessions no training split sees.

* An *evaluation set* is a policy with a fixed set of its own tasks (a
  :class:`~agentworld.core.protocols.TaskingPolicy` with a finite ``num_tasks``, such as the
  terminal's ``handwritten`` sessions). ``[collect] eval_sets = ["handwritten"]`` plays each of
  its tasks once into ``episodes/handwritten.jsonl`` beside the held-out file; no training stage
  reads it, and ``eval`` scores it as the split of that name.
* The *realistic* split holds whole real sources out of training: ``[collect]
  realistic_sources = ["info:grep", ...]`` moves the episodes whose task kind is one of them (the
  terminal's ``real`` policy sets the kind to its source) into ``episodes/realistic.jsonl``
  before the train / held-out split; ``eval`` scores them as the ``realistic`` split.

``[eval] realistic_max_transitions`` caps each of these splits (transitions, in episode order).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from agentworld.core import plugins
from agentworld.core.protocols import TaskingPolicy
from agentworld.core.types import Episode


def episodes_dir(heldout_url: str) -> str:
    """The directory of the held-out episode file, where the other splits' files go."""
    return heldout_url.rsplit("/", 1)[0]


def check_eval_sets(names: list[str], domain: Any) -> dict[str, int]:
    """``{name: number of tasks}`` of the evaluation sets ``names`` of ``domain``.

    Raises:
        ValueError: a name is not a policy of the domain with a fixed set of tasks; the message
            lists the valid names.
    """
    policies = domain.policies()
    valid = sorted(n for n, p in policies.items()
                   if isinstance(p, TaskingPolicy) and p.num_tasks is not None)
    out = {}
    for name in names:
        policy = policies.get(name)
        if not (isinstance(policy, TaskingPolicy) and policy.num_tasks is not None):
            raise ValueError(f"[collect] eval_sets: {name!r} is not an evaluation set of domain "
                             f"{domain.name!r}; valid: {valid}")
        out[name] = int(policy.num_tasks)
    return out


def collect_eval_sets(names: list[str], state: Any, console: Console, *, max_steps: int,
                      workers: int, env_options: dict[str, Any] | None = None
                      ) -> dict[str, dict[str, int]]:
    """Play every task of each evaluation set once in the real environment (made with
    ``env_options``) and write ``episodes/NAME.jsonl``; returns ``{name: {"episodes",
    "transitions"}}``."""
    from agentworld.app.progress_lines import collect_with_progress
    from agentworld.core.io import write_episodes

    sizes = check_eval_sets(names, plugins.get_domain(state.domain))
    facts = {}
    for name, n in sizes.items():
        episodes = collect_with_progress(state.domain, n, console, policies={name: 1.0},
                                         seed=state.seed, max_steps=max_steps, workers=workers,
                                         env_options=env_options)
        write_episodes(f"{episodes_dir(state.heldout_url)}/{name}.jsonl", episodes)
        facts[name] = {"episodes": len(episodes),
                       "transitions": sum(len(e.steps) for e in episodes)}
    return facts


def split_realistic(episodes: list[Episode], sources: list[str]) -> tuple[list[Episode],
                                                                         list[Episode]]:
    """``(others, realistic)``: the episodes whose task kind is one of ``sources`` apart."""
    held = set(sources)
    realistic = [e for e in episodes if e.task is not None and e.task.kind in held]
    return [e for e in episodes if not (e.task is not None and e.task.kind in held)], realistic


def realistic_items(cap: int, names: list[str], state: Any, domain: Any) -> list[Any]:
    """The transitions of ``episodes/realistic.jsonl`` (split ``realistic``) and of each
    evaluation set's ``episodes/NAME.jsonl`` (split ``NAME``) that exist, at most ``cap`` each."""
    from agentworld.app.datasets_at import episodes_at, url_exists
    from agentworld.core.evaluate import REALISTIC, transitions

    if cap <= 0:
        return []
    out = []
    for split in [REALISTIC, *dict.fromkeys(names)]:
        url = f"{episodes_dir(state.heldout_url)}/{split}.jsonl"
        if url_exists(url):
            out += transitions(episodes_at(url), domain=domain, split=split)[:cap]
    return out
