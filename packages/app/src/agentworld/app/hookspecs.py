"""Hook specifications the application adds to the ``agentworld`` pluggy project.

The kernel's hooks (:mod:`agentworld.core.hookspecs`) register plugin objects by name and need
no CLI library. Adding sub-commands needs one, so that hook is specified here, beside the
typer app it receives: a plugin implements ``register_commands`` with the kernel's
``hookimpl`` marker (pluggy matches hooks by name within the project) and imports typer
inside the hook, which only the ``agentworld`` CLI calls. A plugin therefore depends on
``agentworld-core`` alone and gets its commands whenever the CLI is installed.
"""

from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("agentworld")


@hookspec
def register_commands(cli: Any) -> None:
    """Add sub-commands to the ``agentworld`` CLI; ``cli`` is the root ``typer.Typer``."""


def add_to(pm: pluggy.PluginManager) -> None:
    """Add these hook specifications to ``pm`` (once; implementations already registered are
    checked against them by pluggy)."""
    import sys

    caller = getattr(pm.hook, "register_commands", None)
    if caller is None or caller.spec is None:
        pm.add_hookspecs(sys.modules[__name__])
