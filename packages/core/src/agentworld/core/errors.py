"""Errors a plugin raises that the command line reports as one line, without a traceback."""

from __future__ import annotations


class EnvironmentUnavailableError(RuntimeError):
    """A real environment cannot run on this machine as configured (no sandbox, a bound that
    cannot be enforced, a missing program). The message names what is missing and how to get
    it or accept its absence."""


class MissingHooksError(TypeError):
    """A :class:`~agentworld.core.domain_base.DomainBase` or
    :class:`~agentworld.core.domain_base.PolicyBase` subclass built without a hook it must
    implement; the message names the class, the hooks and what to do."""


class PluginContractError(TypeError):
    """A registered plugin object that does not meet its kind's protocol or capabilities
    (raised by :func:`agentworld.core.plugins.check_contract`, which exports it too)."""


class PluginRuntimeError(RuntimeError):
    """A plugin's hook or environment raised while in use (a collection's ``reset`` or
    ``step``, a task sampler's ``sample``); the message is one line naming the domain, the
    plugin that registered it, the call, the exception and where it was raised
    (:mod:`agentworld.core.env_checks`). The original exception is its ``__cause__``."""
