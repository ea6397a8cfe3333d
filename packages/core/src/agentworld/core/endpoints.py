"""Which server a client talks to, and which bearer key it may send there.

A key is sent only to the URL it was configured together with: a ``base_url`` argument with
the ``api_key`` argument, and each ``(URL variable, key variable)`` pair of the environment
(e.g. ``OPENAI_BASE_URL`` with ``OPENAI_API_KEY``). There is no default endpoint: a client
whose URL is neither given nor set in the environment is refused, so a key never goes to
whoever listens on a well-known local port.

Used by every OpenAI-compatible client of the project (the ``openai`` sim backend, the
``llm_judge`` reward, ``agentworld bench judge``, the SFT teacher, the terminal ``llm``
policy).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

EnvPair = tuple[str, str]
"""``(URL variable, key variable)``: the key in the second is for the URL in the first."""

OPENAI_PAIR: EnvPair = ("OPENAI_BASE_URL", "OPENAI_API_KEY")


def same_url(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name the same endpoint (a trailing ``/`` ignored)."""
    return a.rstrip("/") == b.rstrip("/")


def key_for(url: str, pairs: Sequence[tuple[str | None, str | None]]) -> str | None:
    """The key of the first ``(url, key)`` of ``pairs`` whose url is ``url`` and whose key is
    set, else ``None``."""
    for configured, key in pairs:
        if configured and key and same_url(configured, url):
            return key
    return None


def resolve_endpoint(
    who: str,
    base_url: str | None,
    api_key: str | None,
    env_pairs: Sequence[EnvPair],
    *,
    url_vars: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[str, str | None]:
    """``(url, key)`` for a client called ``who`` (used in error messages).

    Args:
        who: The client, as messages name it, e.g. ``"the openai backend"``.
        base_url: The URL given explicitly; ``None``: the first set variable of ``url_vars``.
        api_key: The key for ``base_url`` (only together with it).
        env_pairs: ``(URL variable, key variable)`` pairs, in order of preference: a pair's
            key is taken only when its URL variable names the resolved URL.
        url_vars: Variables the URL is read from when ``base_url`` is ``None`` (default:
            the URL variables of ``env_pairs``).
        environ: The environment (default ``os.environ``).

    Returns:
        The URL as given, and the key configured with it (``None``: send none).

    Raises:
        ValueError: an ``api_key`` without ``base_url``, or no URL at all.
    """
    env = os.environ if environ is None else environ
    if api_key is not None and base_url is None:
        raise ValueError(f"{who} sends api_key only to the base_url given with it; "
                         "pass base_url too")
    names = [u for u, _ in env_pairs] if url_vars is None else list(url_vars)
    url = base_url or next((env[name] for name in names if env.get(name)), None)
    if not url:
        raise ValueError(
            f"{who} has no endpoint: set {' or '.join(names) or 'base_url'} (or pass base_url) "
            "to an OpenAI-compatible server's /v1 URL, e.g. `agentworld serve-openai`'s "
            "http://127.0.0.1:8000/v1"
        )
    pairs = [(base_url, api_key), *((env.get(u), env.get(k)) for u, k in env_pairs)]
    return url, key_for(url, pairs)
