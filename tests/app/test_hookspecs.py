"""The command hook belongs to the application: a plugin implementing it loads under the kernel
alone, and is checked against the hook's signature once the application adds it."""

from __future__ import annotations

import pluggy
import pytest

from agentworld.app import hookspecs as app_hookspecs
from agentworld.core import hookspecs as core_hookspecs
from agentworld.core.hookspecs import hookimpl


class Commands:
    @hookimpl
    def register_commands(self, cli):
        cli.append("hello")


def test_a_command_plugin_loads_under_the_kernel_and_runs_under_the_app() -> None:
    pm = pluggy.PluginManager("agentworld")
    pm.add_hookspecs(core_hookspecs)  # what agentworld.core.plugins does
    pm.register(Commands(), name="commands")
    assert not hasattr(core_hookspecs, "register_commands")
    assert pm.hook.register_commands.spec is None  # registered, unchecked, never called
    app_hookspecs.add_to(pm)
    app_hookspecs.add_to(pm)  # adding the application's specs twice is harmless
    assert pm.hook.register_commands.spec is not None
    added: list[str] = []
    pm.hook.register_commands(cli=added)
    assert added == ["hello"]


def test_a_command_hook_with_a_wrong_signature_is_refused_by_the_app() -> None:
    class Wrong:
        @hookimpl
        def register_commands(self, app):
            raise AssertionError("never called")

    pm = pluggy.PluginManager("agentworld")
    pm.add_hookspecs(core_hookspecs)
    app_hookspecs.add_to(pm)
    with pytest.raises(pluggy.PluginValidationError, match="app"):
        pm.register(Wrong(), name="wrong")
