"""What a domain's hooks return while a collection uses them, checked where it is used: the
environment's ``reset`` and ``step`` results (Gymnasium 1.x shapes), the task sampler's tasks
and the system prompt. A plugin that returns something else, or whose environment raises, is
stopped with one line naming the domain, the plugin that registered it, the member and what
would be valid (docs/plugins.md), instead of an unpacking error or a traceback deep in the
collection code, or a wrong value written to the episodes.

Used by :func:`agentworld.core.episode_runner.run_episode` (threads and Ray workers alike) and
:func:`agentworld.core.collect.collect`.
"""

from __future__ import annotations

import numbers
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

from agentworld.core.errors import (
    EnvironmentUnavailableError,
    PluginContractError,
    PluginRuntimeError,
)
from agentworld.core.llm_policy import LLMServerError
from agentworld.core.types import Action, Observation, Task

#: Errors that already say what is wrong in one line, raised again unchanged (an unreachable
#: endpoint of the ``llm`` policy is the user's setting, not a plugin's bug).
PASSED_THROUGH = (EnvironmentUnavailableError, PluginContractError, PluginRuntimeError,
                  LLMServerError)

RESET_SHAPE = "(observation, info)"
STEP_SHAPE = "(observation, reward, terminated, truncated, info)"
OBSERVATION = "an agentworld.core.types.Observation or a str"


def label(domain: Any) -> str:
    """``domain 'NAME' (registered by 'PLUGIN')``; without the plugin when ``domain`` was
    not built through the plugin manager (a test's own instance)."""
    from agentworld.core import plugins

    try:
        owner = plugins.owner("domain", domain.name)
    except KeyError:
        return f"domain {domain.name!r}"
    return f"domain {domain.name!r} (registered by {owner!r})"


def raised_at(error: BaseException) -> str:
    """``FILE:LINE, in FUNCTION`` of the frame that raised ``error`` (the innermost one)."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "?"
    last = frames[-1]
    return f"{last.filename}:{last.lineno}, in {last.name}"


def _call(domain: Any, what: str, fn: Any, *args: Any, locate: bool = True, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except PASSED_THROUGH:
        raise
    except Exception as error:  # noqa: BLE001 -- the plugin's own bug, named and re-raised
        first = str(error).splitlines()[0] if str(error) else ""
        raise PluginRuntimeError(
            f"{label(domain)}: {what} raised {type(error).__name__}"
            f"{': ' + first if first else ''}{f' (at {raised_at(error)})' if locate else ''}"
        ) from error


def _is_flag(value: Any) -> bool:
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool")


def _shape_problem(result: Any, shape: str) -> str | None:
    size = shape.count(",") + 1
    if not isinstance(result, tuple):
        return f"returned {type(result).__name__}, not the tuple {shape}"
    if len(result) != size:
        hint = (" (Gymnasium 0.21's done is split into terminated and truncated in 1.x)"
                if size == 5 and len(result) == 4 else "")
        return f"returned a tuple of {len(result)}, not {shape}{hint}"
    return None


def _observation_problem(observation: Any) -> str | None:
    if isinstance(observation, (Observation, str)):
        return None
    return f"returned observation {observation!r} ({type(observation).__name__}), not {OBSERVATION}"


def checked_reset(domain: Any, result: Any) -> tuple[Any, dict[str, Any]]:
    """``result``, what the environment's ``reset`` returned, as ``(observation, info)``.

    Raises:
        PluginContractError: it is not a 2-tuple of an observation (an ``Observation`` or a
            ``str``) and a ``dict`` info; the message names the domain, its plugin and the
            shape expected.
    """
    why = _shape_problem(result, RESET_SHAPE)
    if why is None:
        why = _observation_problem(result[0])
    if why is None and not isinstance(result[1], Mapping):
        why = f"returned info {result[1]!r} ({type(result[1]).__name__}), not a dict"
    if why is not None:
        raise PluginContractError(
            f"{label(domain)}: its environment's reset(*, seed, options) {why} (docs/plugins.md)")
    return result[0], dict(result[1])


def checked_step(domain: Any, action: Any, result: Any) -> tuple[Any, float, bool, bool, dict]:
    """``result``, what the environment's ``step(action)`` returned, checked.

    Returns:
        ``(observation, reward, terminated, truncated, info)`` as returned.

    Raises:
        PluginContractError: not a 5-tuple (a Gymnasium 0.21 4-tuple is named as such), an
            observation that is neither an ``Observation`` nor a ``str``, a reward that is not
            a real number, a flag that is not a ``bool``, or an info that is not a ``dict``.
    """
    why = _shape_problem(result, STEP_SHAPE)
    if why is None:
        observation, reward, terminated, truncated, info = result
        why = _observation_problem(observation)
        if why is None and (isinstance(reward, bool) or not isinstance(reward, numbers.Real)):
            why = f"returned reward {reward!r} ({type(reward).__name__}), not a float"
        for name, flag in (("terminated", terminated), ("truncated", truncated)):
            if why is None and not _is_flag(flag):
                why = f"returned {name} {flag!r} ({type(flag).__name__}), not a bool"
        if why is None and not isinstance(info, Mapping):
            why = f"returned info {info!r} ({type(info).__name__}), not a dict"
    if why is not None:
        raise PluginContractError(
            f"{label(domain)}: its environment's step({_shown(action)}) {why} (docs/plugins.md)")
    return result


def _shown(action: Any) -> str:
    text = action.text if isinstance(action, Action) else action
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."


class CheckedEnvironment:
    """``env`` (a domain's real environment) whose ``reset`` and ``step`` results are checked
    (:func:`checked_reset`, :func:`checked_step`) and whose exceptions are named
    (:class:`~agentworld.core.errors.PluginRuntimeError`: the domain, its plugin, the call and
    where it raised, unless ``locate`` is false: a server's clients are not shown host
    paths); ``close`` closes ``env``. A stand-in for the rollout loop only: callers that ask
    what ``env`` can do (its privileged state, its own system prompt) ask ``env``."""

    def __init__(self, domain: Any, env: Any, *, locate: bool = True):
        self.domain, self.env, self.locate = domain, env, locate

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        result = _call(self.domain, "its environment's reset(*, seed, options)", self.env.reset,
                       seed=seed, options=options, locate=self.locate)
        return checked_reset(self.domain, result)

    def step(self, action: Any) -> Any:
        result = _call(self.domain, f"its environment's step({_shown(action)})", self.env.step,
                       action, locate=self.locate)
        return checked_step(self.domain, action, result)

    def close(self) -> None:
        _call(self.domain, "its environment's close()", self.env.close, locate=self.locate)


def checked_tasks(domain: Any, tasks: Any, n: int, seed: int) -> list[Task]:
    """``tasks``, what ``domain.tasks().sample(n, seed=seed)`` returned, as a list.

    Raises:
        PluginContractError: not a sequence of ``n`` :class:`~agentworld.core.types.Task`
            objects; the message names the first wrong item.
    """
    call = f"tasks().sample({n}, seed={seed})"
    if not isinstance(tasks, Sequence) or isinstance(tasks, (str, bytes)):
        why = f"returned {type(tasks).__name__}, not a list of {n} Task"
    elif len(tasks) != n:
        why = f"returned {len(tasks)} tasks, not {n}"
    else:
        bad = next(((i, t) for i, t in enumerate(tasks) if not isinstance(t, Task)), None)
        why = None if bad is None else (
            f"returned a {type(bad[1]).__name__} at index {bad[0]}, not an "
            "agentworld.core.types.Task (build Task(id=..., domain=..., instruction=...))")
    if why is not None:
        raise PluginContractError(f"{label(domain)}: {call} {why} (docs/plugins.md)")
    return list(tasks)


def sample_tasks(domain: Any, n: int, seed: int) -> list[Task]:
    """``domain.tasks().sample(n, seed=seed)``, checked (:func:`checked_tasks`); an exception
    the sampler raises is named (:class:`~agentworld.core.errors.PluginRuntimeError`)."""
    sampler = domain.tasks()
    tasks = _call(domain, f"tasks().sample({n}, seed={seed})", sampler.sample, n, seed=seed)
    return checked_tasks(domain, tasks, n, seed)


def policy_action(domain: Any, policy: Any, task: Task | None, history: list[Any]) -> Any:
    """``policy.act(task, history)``: an :class:`~agentworld.core.types.Action`, or ``None``
    (the episode ends).

    Raises:
        PluginContractError: it returned something else (a ``str``: wrap it as
            ``Action(text=...)``).
        agentworld.core.errors.PluginRuntimeError: the policy raised.
    """
    what = f"policy {policy.name!r}'s act(task, history)"
    action = _call(domain, what, policy.act, task, history)
    if action is not None and not isinstance(action, Action):
        hint = " (wrap it: Action(text=...))" if isinstance(action, str) else ""
        raise PluginContractError(
            f"{label(domain)}: {what} returned {action!r} ({type(action).__name__}), not an "
            f"agentworld.core.types.Action or None{hint} (docs/plugins.md)")
    return action


def checked_prompt(domain: Any, prompt: Any) -> str:
    """``prompt``, what ``system_prompt(task)`` returned.

    Raises:
        PluginContractError: it is not a ``str``.
    """
    if not isinstance(prompt, str):
        raise PluginContractError(
            f"{label(domain)}: system_prompt(task) returned {prompt!r} "
            f"({type(prompt).__name__}), not a str (docs/plugins.md)")
    return prompt


def initial_text(domain: Any, task: Task | None) -> str | None:
    """``domain``'s ``initial_observation(task)`` (through
    :func:`~agentworld.core.domain_base.domain_hooks`): the text a simulated episode starts
    from, or ``None`` when the domain has none.

    Raises:
        PluginContractError: it returned neither a ``str`` nor ``None``.
    """
    from agentworld.core.domain_base import domain_hooks

    text = domain_hooks(domain).initial_observation(task)
    if text is not None and not isinstance(text, str):
        raise PluginContractError(
            f"{label(domain)}: initial_observation(task) returned {text!r} "
            f"({type(text).__name__}), not a str or None (docs/plugins.md, ResettableDomain)")
    return text


def verdict(domain: Any, observation: str, task: Task | None) -> tuple[float, bool] | None:
    """``domain``'s ``verify(observation, task)`` (through
    :func:`~agentworld.core.domain_base.domain_hooks`) as ``(reward, terminated)``, or ``None``
    (it cannot tell).

    Raises:
        PluginContractError: it returned something else than ``None`` or a pair of a number
            and a ``bool``.
    """
    from agentworld.core.domain_base import domain_hooks

    got = domain_hooks(domain).verify(observation, task)
    if got is None:
        return None
    if (isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], numbers.Real)
            and not isinstance(got[0], bool) and _is_flag(got[1])):
        return float(got[0]), bool(got[1])
    raise PluginContractError(
        f"{label(domain)}: verify(observation, task) returned {got!r} ({type(got).__name__}), "
        "not None or (reward: float, terminated: bool) (docs/plugins.md, RewardingDomain)")
