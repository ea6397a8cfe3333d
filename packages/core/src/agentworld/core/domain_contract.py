"""What the contract check asks of a domain beyond its members: the types of its attributes
(from :class:`~agentworld.core.domain_base.DomainBase`'s annotations), its hooks all
implemented, and the objects it returns (its policies and its task sampler; a hook that
raises here is left to raise where it is used).

Called by :func:`agentworld.core.plugins.check_contract` when a domain is first built.
"""

from __future__ import annotations

import functools
import math
import numbers
import types
import typing
from collections.abc import Mapping
from typing import Any

from agentworld.core.contracts import (
    MISSING,
    matches,
    member,
    missing_members,
    signature_mismatch,
    unaccepted_keywords,
)
from agentworld.core.domain_base import DomainBase, domain_hooks
from agentworld.core.errors import PluginContractError
from agentworld.core.options import env_options_of
from agentworld.core.protocols import Environment, Policy, TaskSampler
from agentworld.core.types import Action, Observation


@functools.cache
def attribute_types() -> dict[str, Any]:
    """``{attribute: type}`` a domain's attributes must have (DomainBase's annotations)."""
    return typing.get_type_hints(DomainBase)


def problem(domain: Any) -> str | None:
    """Why ``domain`` breaks the contract (one clause saying what to change), or ``None``."""
    if isinstance(domain, DomainBase) and type(domain).__abstractmethods__:
        return f"does not implement {', '.join(sorted(type(domain).__abstractmethods__))}"
    for name, hint in attribute_types().items():
        value = member(domain, name)
        if value is not MISSING and not matches(value, hint):
            return f"has {name} = {value!r}, which is not {_shown(hint)}"
    if not domain.name:
        return "has an empty name"
    window = member(domain, "history_window")
    if isinstance(window, int) and window < 1:
        return f"has history_window = {window}; it must be >= 1 (or None: the whole history)"
    hooks = domain_hooks(domain)
    flags = {"has_verifier": hooks.has_verifier, "has_rationales": hooks.has_rationales,
             "has_text_rationales": hooks.has_text_rationales}
    for flag, value in flags.items():
        if not isinstance(value, bool):
            return f"has {flag} = {value!r}, which is not bool"
    why = _declared_problem(domain, flags) or _options_problem(domain) or _answers_problem(domain)
    if why is not None:
        return why
    return _returned(domain.policies, _policies_problem) or _returned(domain.tasks, _sampler_problem)


#: ``(flag, hook)``: a DomainBase subclass that sets the flag true must override the hook.
FLAGGED_HOOKS = (("has_verifier", "verify"), ("has_rationales", "explain"),
                 ("has_text_rationales", "explain_text"))


def _declared_problem(domain: Any, flags: dict[str, bool]) -> str | None:
    """A capability a :class:`DomainBase` subclass declares and does not implement: a flag
    set true whose hook is the base class's "absent" default, or ``has_environment = False``
    beside its own ``make_env`` (listed as data-only while collection ran it)."""
    if not isinstance(domain, DomainBase):
        return None
    cls = type(domain)
    for flag, hook in FLAGGED_HOOKS:
        if flags[flag] and _own(cls, hook) is vars(DomainBase)[hook]:
            return (f"sets {flag} = True but does not override {hook}; define {hook} "
                    f"(docs/plugins.md, capabilities) or drop the flag")
    if not domain.has_environment and _own(cls, "make_env") is not vars(DomainBase)["make_env"]:
        return ("sets has_environment = False but defines make_env: `agentworld domains` would "
                "list it as data-only while collect runs make_env; remove has_environment = "
                "False for a real environment, or make_env for a data-only domain")
    return None


def _own(cls: type, name: str) -> Any:
    """The function ``cls`` (or the nearest class of its MRO) defines as ``name``."""
    return next(vars(k)[name] for k in cls.__mro__ if name in vars(k))


def _options_problem(domain: Any) -> str | None:
    """A declared options class whose defaults its own types refuse, or a ``make_env`` that
    cannot take an option it declares (``collect --set`` would fail inside ``make_env``)."""
    model = env_options_of(domain)
    if model.model_config.get("extra") == "allow":
        return None  # AnyEnvOptions: keys pass through unchecked
    from pydantic import ValidationError

    strict = type(model.__name__, (model,), {  # the same class, its defaults validated too
        "model_config": {**model.model_config, "validate_default": True}})
    try:
        strict.model_validate({})
    except ValidationError as e:  # a required option ("missing") is no default's fault
        err = next((x for x in e.errors() if x["type"] != "missing"), None)
        if err is not None:
            name = ".".join(str(p) for p in err["loc"]) or "(model)"
            return (f"declares env_options {model.__name__} whose default {name}="
                    f"{err['input']!r} its own type refuses ({err['msg']}); fix the default")
    if member(domain, "has_environment") is False:
        return None
    refused = unaccepted_keywords(domain.make_env, list(model.model_fields))
    if refused:
        return (f"declares env_options {model.__name__} with {', '.join(refused)}, which "
                f"make_env does not take; accept {'it' if len(refused) == 1 else 'them'} as "
                "keyword arguments of make_env (or **kwargs), or rename the option")
    return None


def _answers_problem(domain: Any) -> str | None:
    """What ``score`` and ``action_type`` answer for a probe (``"x"`` against itself, the
    action ``x``), which every prediction and action text may be: a score that is no number in
    [0, 1], or an action type that is no ``str``, would be used as is (clamped, or shown as
    ``None``) in fidelity reports. A probe that raises is left to raise where it is used."""
    try:
        score = domain.score("x", Observation(text="x"))
    except Exception:  # noqa: BLE001 -- the plugin's own error, raised again at use
        score = MISSING
    if score is not MISSING and (isinstance(score, bool) or not isinstance(score, numbers.Real)
                                 or math.isnan(score) or not 0.0 <= score <= 1.0):
        return (f"score('x', Observation(text='x')) returned {score!r} "
                f"({type(score).__name__}); a score is a float in [0, 1]")
    try:
        kind = domain.action_type(Action(text="x"))
    except Exception:  # noqa: BLE001 -- the plugin's own error, raised again at use
        kind = MISSING
    if kind is not MISSING and not isinstance(kind, str):
        return (f"action_type(Action(text='x')) returned {kind!r} ({type(kind).__name__}); an "
                "action type is a str (fidelity reports are broken down by it)")
    return None


def _returned(hook: Any, check: Any) -> str | None:
    """``check`` of what ``hook()`` returns; a hook that raises (a sampler that needs data
    not here) is left to raise where it is used, with its own message."""
    try:
        made = hook()
    except Exception:  # noqa: BLE001 -- the plugin's own error, raised again at use
        return None
    return check(made)


def _policies_problem(policies: Any) -> str | None:
    if not isinstance(policies, Mapping):
        return f"policies() returned {type(policies).__name__}, not a dict of name -> policy"
    for key, policy in policies.items():
        if not isinstance(key, str) or not key:
            return f"policies() has key {key!r}; policy names are non-empty strings"
        lacks = missing_members(policy, Policy)
        if lacks:
            return (f"policies()[{key!r}] is a {type(policy).__name__} lacking "
                    f"{', '.join(lacks)} of the Policy protocol (subclass "
                    "agentworld.core.domain_base.PolicyBase)")
        why = signature_mismatch(policy, Policy)
        if why is not None:
            return f"policies()[{key!r}]: {why}"
    return None


def _sampler_problem(sampler: Any) -> str | None:
    lacks = missing_members(sampler, TaskSampler)
    if lacks:
        return (f"tasks() returned a {type(sampler).__name__} lacking sample(n, *, seed) "
                "of the TaskSampler protocol")
    why = signature_mismatch(sampler, TaskSampler)
    return None if why is None else f"tasks(): {why}"


def _shown(hint: Any) -> str:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return " | ".join(_shown(a) for a in typing.get_args(hint))
    if hint is type(None):
        return "None"
    return hint.__name__ if isinstance(hint, type) and not typing.get_args(hint) else str(hint)


def checked_env(domain: Any, env: Any) -> Any:
    """``env``, what ``domain.make_env`` returned, checked at its first use: it must have
    ``reset``, ``step`` and ``close`` (:class:`~agentworld.core.protocols.Environment`).

    Raises:
        agentworld.core.errors.PluginContractError: it lacks one; the message names the
            domain, the object's type and the members.
    """
    lacks = missing_members(env, Environment)
    if lacks:
        raise PluginContractError(
            f"domain {domain.name!r}: make_env() returned a {type(env).__name__} lacking "
            f"{', '.join(lacks)} of the Environment protocol (reset(*, seed, options) -> "
            "(observation, info), step(action) -> (observation, reward, terminated, truncated, "
            "info), close()); wrap a Gymnasium Text-action env in "
            "agentworld.core.textenv.TextActions"
        )
    return env
