"""Typed options of a domain's real environment.

A domain declares what ``make_env`` accepts from the command line (``agentworld collect --set
KEY=VALUE``) and from a pipeline file (``[collect] env_options``) as a pydantic class, its
``env_options`` attribute (:class:`~agentworld.core.domain_base.DomainBase` declares it with
the permissive :class:`AnyEnvOptions`). The framework parses the given values with it before
any file is written: ``--set`` values are strings and pydantic coerces them (``"5"`` -> ``5``,
``"true"`` -> ``True``); an unknown or ill-typed option is one :class:`OptionsError` line naming
the option and every accepted one with its type.

Python callers of ``make_env`` keep passing objects (a task sampler, terminal ``Limits``) that
no string can give; those are no options here.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Protocol, Union, get_args, get_origin, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "AnyEnvOptions",
    "EnvOptions",
    "Field",
    "OptionsDeclaringDomain",
    "OptionsError",
    "accepted",
    "env_options_of",
    "parse_env_options",
    "parse_options",
]


class EnvOptions(BaseModel):
    """Base of a domain's options class: unknown keys are refused, strings are coerced to the
    field's type, NaN and infinities are refused. Declare each option as a field with the
    default its environment uses, e.g. ``max_steps: int = Field(50, ge=1)`` (``Field`` is
    pydantic's, re-exported here so that a plugin needs the kernel alone)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)


class AnyEnvOptions(BaseModel):
    """The default of a domain that declares no options class: every key passes to
    ``make_env`` unchanged (``--set`` values stay strings), as before typed options."""

    model_config = ConfigDict(extra="allow", frozen=True)


@runtime_checkable
class OptionsDeclaringDomain(Protocol):
    """A domain that declares its environment's options (every
    :class:`~agentworld.core.domain_base.DomainBase`, or a structural plugin with the
    attribute)."""

    name: str
    env_options: type[BaseModel]


class OptionsError(ValueError):
    """Options a domain's environment does not accept; the message is one line naming the
    option at fault and the accepted ones with their types."""


def env_options_of(domain: Any) -> type[BaseModel]:
    """The options class of ``domain``: its ``env_options``, else :class:`AnyEnvOptions`."""
    return domain.env_options if isinstance(domain, OptionsDeclaringDomain) else AnyEnvOptions


def parse_env_options(domain: Any, values: Mapping[str, Any] | None) -> dict[str, Any]:
    """``values`` (``--set`` strings, TOML values) checked and coerced by ``domain``'s options
    class: the keyword arguments to give ``domain.make_env``, only those given (the
    environment's own defaults stand for the rest).

    Raises:
        OptionsError: an unknown option, or a value its type does not accept.
    """
    return parse_options(env_options_of(domain), values, what="environment option",
                         where=f"domain {domain.name!r}")


def parse_options(model: type[BaseModel], values: Mapping[str, Any] | None, *,
                  what: str = "option", where: str = "") -> dict[str, Any]:
    """``values`` validated by ``model``, as ``{name: typed value}`` for the names given.

    Args:
        model: A pydantic class; ``extra="forbid"`` makes unknown names errors.
        values: Option names to values (strings are coerced, ``"5"`` -> ``5``).
        what: What an option is, for the message (``"environment option"``).
        where: Whose options they are, the message's prefix (``"domain 'terminal'"``).

    Raises:
        OptionsError: one line, e.g. ``domain 'terminal': unknown environment option
            'bogus'; accepted: max_steps (int, default 50), ...``.
    """
    values = dict(values or {})
    try:
        parsed = model.model_validate(values)
    except ValidationError as e:
        problems = "; ".join(_problem(err, what) for err in e.errors())
        raise OptionsError(f"{where + ': ' if where else ''}{problems}; "
                           f"accepted: {accepted(model)}") from None
    return {key: value for key, value in parsed.model_dump().items() if key in values}


def accepted(model: type[BaseModel]) -> str:
    """``model``'s options as ``name (type, default D)`` items, comma-separated; ``"none"``
    for a model without fields, ``"any"`` for one that allows extra keys."""
    fields = [f"{name} ({type_name(f.annotation)}"
              + ("" if f.is_required() else f", default {f.get_default(call_default_factory=True)!r}")
              + ")" for name, f in model.model_fields.items()]
    if model.model_config.get("extra") == "allow":
        fields.append("any other")
    return ", ".join(fields) or "none"


def _problem(err: Any, what: str) -> str:
    """One pydantic error as a phrase naming the option and, for a bad value, the value."""
    name = ".".join(str(part) for part in err["loc"]) or "?"
    if err["type"] == "extra_forbidden":
        return f"unknown {what} {name!r}"
    if err["type"] == "missing":
        return f"{what} {name!r} is required"
    return f"{what} {name}={err['input']!r}: {err['msg']}"


def type_name(annotation: Any) -> str:
    """A short readable type: ``int``, ``str | None``, ``'ansi' | None``."""
    if annotation is None or annotation is type(None):
        return "None"
    origin = get_origin(annotation)
    if origin is Annotated:
        return type_name(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(arg) for arg in get_args(annotation))
    if origin is Literal:
        return " | ".join(repr(arg) for arg in get_args(annotation))
    if isinstance(annotation, type) and origin is None:
        return annotation.__name__
    return str(annotation).replace("typing.", "")
