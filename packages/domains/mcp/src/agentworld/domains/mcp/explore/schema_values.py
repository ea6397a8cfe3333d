"""Values valid for a JSON Schema, drawn with ``hypothesis-jsonschema`` (types, enums, required
fields, formats, bounds, patterns), seeded, outside any test run.

Hypothesis is imported at the first draw, not with this module, and keeps its files (a Unicode
table cache) in the private cache directory ``agentworld.core.cache.cache_dir("hypothesis")``
unless ``$HYPOTHESIS_STORAGE_DIRECTORY`` says where: never a ``.hypothesis`` folder in the
working directory of a collection (or of a command that only imports the domain).
"""

from __future__ import annotations

import functools
import json
import os
import threading
from typing import Any

import jsonschema
from agentworld.core.cache import cache_dir

_LOCK = threading.Lock()  # Hypothesis' engine is not meant to run in several threads at once


@functools.cache
def _storage() -> None:
    """Point Hypothesis' storage at the private cache (once, before its first import here)."""
    if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        from hypothesis.configuration import set_hypothesis_home_dir

        set_hypothesis_home_dir(cache_dir("hypothesis"))


@functools.lru_cache(maxsize=512)
def _examples(schema_json: str, seed: int, n: int) -> tuple[str, ...]:
    _storage()
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis.errors import HypothesisException
    from hypothesis_jsonschema import from_schema

    schema = json.loads(schema_json)
    out: list[str] = []
    try:
        strategy = from_schema(schema)
    except (HypothesisException, jsonschema.exceptions.SchemaError, ValueError, TypeError):
        return ()

    @hypothesis_seed(seed)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    @given(strategy)
    def draw(value: Any) -> None:
        out.append(json.dumps(value, sort_keys=True))

    with _LOCK:
        try:
            draw()
        except (HypothesisException, ValueError, TypeError, RecursionError):
            pass
    return tuple(dict.fromkeys(out))


def schema_examples(schema: dict[str, Any], seed: int, n: int = 16) -> list[Any]:
    """Up to ``n`` distinct values valid for ``schema`` (JSON Schema; ``$ref`` to its own
    ``$defs``/``definitions``), the same for the same ``seed``; ``[]`` when the schema cannot
    be generated from (unsatisfiable, unsupported)."""
    return [json.loads(v) for v in _examples(json.dumps(schema, sort_keys=True), seed, n)]


def valid(schema: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` is valid for ``schema`` (a schema that is itself broken: ``True``,
    the server decides)."""
    try:
        cls = jsonschema.validators.validator_for(schema)
        return cls(schema).is_valid(value)
    except (jsonschema.exceptions.SchemaError, jsonschema.exceptions.RefResolutionError,
            TypeError, ValueError):
        return True


def with_definitions(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (a property of ``root``) with ``root``'s ``$defs``/``definitions``, so its
    ``$ref``s resolve on their own."""
    extra = {k: root[k] for k in ("$defs", "definitions") if isinstance(root.get(k), dict)}
    return {**schema, **extra} if extra and isinstance(schema, dict) else schema


def kinds(schema: dict[str, Any]) -> set[str]:
    """The JSON types a schema allows, ``null`` left out (``anyOf``/``oneOf`` branches
    joined); ``{"string"}`` for an enum of strings; empty when it does not say."""
    if not isinstance(schema, dict):
        return set()
    kind = schema.get("type")
    out = set(kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else [])
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key) or []:
            out |= kinds(branch)
    if not out and isinstance(schema.get("enum"), list):
        out = {type_name(v) for v in schema["enum"]}
    return out - {"null"}


def type_name(value: Any) -> str:
    """The JSON type name of a Python value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "null")
