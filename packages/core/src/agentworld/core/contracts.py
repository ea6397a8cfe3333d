"""Checking a plugin object against a protocol: its members, and the signatures of its methods.

The one place that looks members up by name (the names a protocol declares), so that callers
never need to: they use ``isinstance`` against a protocol, or :mod:`agentworld.core.domain_base`.
"""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any


MISSING = object()  # what member() gives for an absent member


def protocol_members(protocol: type) -> list[str]:
    """The members a protocol class declares itself (annotations, then methods), in order."""
    own = dict(vars(protocol))
    names = list(own.get("__annotations__", {}))
    names += [k for k, v in own.items() if callable(v) and not k.startswith("_")]
    if "__call__" in own:
        names.append("__call__")
    return names


def member(obj: Any, name: str) -> Any:
    """``obj``'s member ``name`` (a name its protocol declares), or :data:`MISSING`."""
    return getattr(obj, name, MISSING)


def missing_members(obj: Any, protocol: type) -> list[str]:
    """Members of ``protocol`` that ``obj`` lacks (a declared method that is not callable
    counts as missing)."""
    own = vars(protocol)
    missing = []
    for name in protocol_members(protocol):
        value = member(obj, name)
        if value is MISSING or (callable(own.get(name)) and not callable(value)):
            missing.append(name)
    return missing


def matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` has type ``hint`` (a class, ``None``, ``X | Y``, ``list[X]``,
    ``tuple[X, ...]``, ``set[X]``, ``dict[K, V]`` or ``Any``); ``bool`` is no ``int`` or
    ``float`` here. Other generic forms are taken on trust."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    if origin is typing.Union or isinstance(hint, types.UnionType):
        return any(matches(value, a) for a in args)
    if origin in (list, set, frozenset, tuple):
        if not isinstance(value, origin):
            return False
        item = args[0] if args else Any
        return all(matches(v, item) for v in value)
    if origin is dict:
        key, item = args or (Any, Any)
        return isinstance(value, dict) and all(
            matches(k, key) and matches(v, item) for k, v in value.items())
    if hint in (int, float):
        return isinstance(value, (int, float) if hint is float else int) and not isinstance(value, bool)
    return not isinstance(hint, type) or isinstance(value, hint)


def signature_mismatch(obj: Any, protocol: type) -> str | None:
    """Why a method ``protocol`` declares cannot take the calls callers make on ``obj`` (its
    required parameters by position, those with a default and keyword-only ones by name), or
    ``None`` when every method can. A builtin without a signature is taken on trust."""
    for name in protocol_members(protocol):
        declared = vars(protocol).get(name)
        if not callable(declared):
            continue
        wanted = list(inspect.signature(declared).parameters.values())[1:]  # without self
        args: list[None] = []
        kwargs: dict[str, None] = {}
        for p in wanted:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if p.kind is p.KEYWORD_ONLY or p.default is not p.empty:
                kwargs[p.name] = None
            else:
                args.append(None)
        try:
            found = inspect.signature(member(obj, name))
        except (TypeError, ValueError):
            continue
        try:
            found.bind(*args, **kwargs)
        except TypeError as exc:
            shown = ", ".join(str(p) for p in wanted)
            return f"{name}{found} cannot be called as {name}({shown}) ({exc})"
    return None


def unaccepted_keywords(fn: Any, names: list[str]) -> list[str]:
    """Of ``names``, those ``fn`` cannot take as keyword arguments (it has no ``**kwargs`` and
    no such parameter, or the parameter is positional-only); ``[]`` for a builtin without a
    signature (taken on trust)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return []
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return []
    return [n for n in names if n not in params or params[n].kind is params[n].POSITIONAL_ONLY]
