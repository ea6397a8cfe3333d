"""Plugin of ``agentworld-sim``: registers the ``hf`` sim backend (torch is imported lazily)."""

from __future__ import annotations

from typing import Any

from agentworld.core.hookspecs import Register, hookimpl


def _hf_backend() -> Any:
    from agentworld.sim.backends.hf import HFBackend

    return HFBackend()


@hookimpl
def register_sim_backends(register: Register) -> None:
    register("hf", _hf_backend)
