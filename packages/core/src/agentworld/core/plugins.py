"""The plugin manager: entry-point group ``agentworld``, lazy registries.

Environment variables:
    AGENTWORLD_LOAD_PLUGINS: comma-separated entry-point names; when set, only
        these third-party/built-in entry points are loaded ("" loads none).
    AGENTWORLD_BLOCK_PLUGINS: comma-separated entry-point names never loaded.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import pluggy

from agentworld.core import hookspecs

GROUP = "agentworld"
KINDS = {
    "domain": "register_domains",
    "reward": "register_rewards",
    "trainer": "register_trainers",
    "sim_backend": "register_sim_backends",
    "policy": "register_policies",
}


class UnknownPluginError(KeyError):
    """A plugin name that no installed plugin registered."""

    def __init__(self, kind: str, name: str, installed: list[str]):
        self.kind, self.name, self.installed = kind, name, installed
        listed = ", ".join(sorted(installed)) or "none"
        super().__init__(
            f"unknown {kind} {name!r}; installed {kind}s: {listed}. "
            f"Install a plugin that provides it (see `agentworld plugins`)."
        )

    def __str__(self) -> str:
        return self.args[0]


@dataclass(slots=True)
class _Registry:
    kind: str
    factories: dict[str, Callable[..., Any]] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)


pm = pluggy.PluginManager(GROUP)
pm.add_hookspecs(hookspecs)
_loaded = False
_registries: dict[str, _Registry] = {}


def _csv_env(name: str) -> set[str] | None:
    value = os.environ.get(name)
    if value is None:
        return None
    return {part.strip() for part in value.split(",") if part.strip()}


def load_plugins() -> pluggy.PluginManager:
    """Load entry-point plugins once (honouring the allow/block lists) and return ``pm``."""
    global _loaded
    if _loaded:
        return pm
    _loaded = True
    allow = _csv_env("AGENTWORLD_LOAD_PLUGINS")
    block = _csv_env("AGENTWORLD_BLOCK_PLUGINS") or set()
    for ep in entry_points(group=GROUP):
        if ep.name in block or (allow is not None and ep.name not in allow):
            continue
        if pm.get_plugin(ep.name) is not None:
            continue
        pm.register(ep.load(), name=ep.name)
    from agentworld.core import builtins

    if pm.get_plugin("core") is None:
        pm.register(builtins, name="core")
    return pm


def _registry(kind: str) -> _Registry:
    if kind not in KINDS:
        raise ValueError(f"unknown plugin kind {kind!r}; valid: {', '.join(KINDS)}")
    load_plugins()
    reg = _registries.get(kind)
    if reg is None:
        reg = _Registry(kind)
        hook = getattr(pm.hook, KINDS[kind])
        for impl in hook.get_hookimpls():
            owner = pm.get_name(impl.plugin) or impl.plugin_name

            def register(name: str, factory: Callable[..., Any], _owner: str = owner) -> None:
                reg.factories[name] = factory
                reg.owners[name] = _owner

            impl.function(register=register)
        _registries[kind] = reg
    return reg


def reset_registries() -> None:
    """Forget built registries so newly (un)registered plugins are seen. For tests."""
    _registries.clear()


def names(kind: str) -> list[str]:
    """Registered names of one kind (``"domain"``, ``"reward"``, ...), sorted."""
    return sorted(_registry(kind).factories)


def owner(kind: str, name: str) -> str:
    """Name of the plugin that registered ``name``."""
    return _registry(kind).owners[name]


def factory(kind: str, name: str) -> Callable[..., Any]:
    """The registered factory for ``name``.

    Raises:
        UnknownPluginError: ``name`` is not registered; the message lists the installed ones.
    """
    reg = _registry(kind)
    if name not in reg.factories:
        raise UnknownPluginError(kind.replace("_", " "), name, list(reg.factories))
    return reg.factories[name]


def get(kind: str, name: str, **options: Any) -> Any:
    """Build (or return the cached, when no options are given) plugin object ``name``.

    Raises:
        UnknownPluginError: ``name`` is not registered.
    """
    reg = _registry(kind)
    make = factory(kind, name)
    if options:
        return make(**options)
    if name not in reg.cache:
        reg.cache[name] = make()
    return reg.cache[name]


def get_domain(name: str) -> Any:
    """The :class:`~agentworld.core.protocols.Domain` registered as ``name``."""
    return get("domain", name)


def get_reward(name: str, **options: Any) -> Any:
    """The :class:`~agentworld.core.protocols.RewardFn` registered as ``name``."""
    return get("reward", name, **options)


def get_trainer(name: str) -> Any:
    """The :class:`~agentworld.core.protocols.Trainer` registered as ``name``."""
    return get("trainer", name)


def get_sim_backend(name: str) -> Any:
    """The :class:`~agentworld.core.protocols.SimBackend` registered as ``name``."""
    return get("sim_backend", name)


def plugin_table() -> list[dict[str, Any]]:
    """Installed plugins: ``[{"name", "hooks", "version"}]`` for ``agentworld plugins``."""
    load_plugins()
    dists = {ep.name: ep.dist for ep in entry_points(group=GROUP)}
    rows = []
    for plugin in pm.get_plugins():
        name = pm.get_name(plugin)
        hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or [])
        dist = dists.get(name)
        rows.append({
            "name": name,
            "hooks": hooks,
            "version": dist.version if dist else "built-in",
            "package": dist.name if dist else "agentworld-core",
        })
    return sorted(rows, key=lambda r: r["name"])
