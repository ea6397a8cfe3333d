"""Plugin entry point (group ``agentworld``, name ``classic``).

Registers one domain per Gymnasium toy-text variant (``frozenlake-4x4``,
``frozenlake-4x4-slippery``, ``frozenlake-8x8``, ``frozenlake-8x8-slippery``,
``taxi``, ``cliffwalking``); Gymnasium is imported only when a factory is called.
"""

from __future__ import annotations

from typing import Any

from agentworld.core.hookspecs import Register, hookimpl

NAMES = (
    "frozenlake-4x4",
    "frozenlake-4x4-slippery",
    "frozenlake-8x8",
    "frozenlake-8x8-slippery",
    "taxi",
    "cliffwalking",
)


def _factory(name: str) -> Any:
    def make() -> Any:
        from agentworld.domains.classic.domain import ClassicDomain

        return ClassicDomain(name)

    return make


@hookimpl
def register_domains(register: Register) -> None:
    """Register the six classic domains."""
    for name in NAMES:
        register(name, _factory(name))
