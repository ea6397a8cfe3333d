"""The plugin manager: entry-point group ``agentworld``, lazy registries, checked contracts.

Each kind of plugin has a protocol (:data:`agentworld.core.protocols.KIND_PROTOCOLS`) and
optional capabilities (:data:`agentworld.core.protocols.CAPABILITIES`). A plugin object is
checked against them once, when its factory first builds it; one that lacks a required
member, or has only part of a capability, raises :class:`PluginContractError` naming the
members. Call sites then ask ``domain_hooks(domain)`` (:mod:`agentworld.core.domain_base`)
for a domain's optional hooks, never ``isinstance`` against a domain capability.

Environment variables:
    AGENTWORLD_LOAD_PLUGINS: comma-separated entry-point names; when set, only
        these third-party/built-in entry points are loaded ("" loads none).
    AGENTWORLD_BLOCK_PLUGINS: comma-separated entry-point names never loaded.

A broken third-party plugin does not stop the others: an entry point that fails to import or
to register (pluggy's validation: a hook parameter other than ``register``), or whose
registration hook raises, is skipped with a one-line warning naming it (:data:`skipped`); an
``@hookimpl`` whose name is not an agentworld hook (a typo such as ``register_domain``) is
reported the same way. Two registrations of one name without priorities make only that name
unusable (:class:`PluginContractError` when it is asked for), not the whole registry.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import pluggy
from agentworld.core import hookspecs
from agentworld.core.contracts import missing_members, protocol_members, signature_mismatch
from agentworld.core.errors import MissingHooksError, PluginContractError
from agentworld.core.protocols import (
    CAPABILITIES,
    KIND_PROTOCOLS,
    Domain,
    RewardFn,
    SimBackend,
    Trainer,
)

logger = logging.getLogger(__name__)

GROUP = "agentworld"
KINDS = {
    "domain": "register_domains",
    "reward": "register_rewards",
    "trainer": "register_trainers",
    "sim_backend": "register_sim_backends",
}
#: Kinds whose objects may hold state between calls: built fresh by every :func:`get`.
FRESH_KINDS = frozenset({"trainer"})
#: Hooks another layer specifies in the same pluggy project (the CLI's ``register_commands``,
#: :mod:`agentworld.app.hookspecs`): not typos, whether or not that layer is loaded.
APPLICATION_HOOKS = frozenset({"register_commands"})
#: The hooks a plugin may implement, with their one parameter.
HOOKS = ", ".join([*(f"{hook}(register)" for hook in KINDS.values()), "register_commands(cli)"])


#: Members of the Domain protocol that DomainBase gives a default (exact match, first word,
#: no facts): a structural domain without them is told it may subclass DomainBase instead.
DOMAIN_BASE_DEFAULTS = frozenset({"score", "action_type", "describe"})


class UnknownPluginError(KeyError):
    """A plugin name that no installed plugin registered."""

    def __init__(self, kind: str, name: str, installed: list[str]):
        self.kind, self.name, self.installed = kind, name, installed
        listed = ", ".join(sorted(installed)) or "none"
        broken = "; ".join(f"{ep}: {why}" for ep, why in sorted(skipped.items()))
        super().__init__(
            f"unknown {kind} {name!r}; installed {kind}s: {listed}. "
            f"Install a plugin that provides it (see `agentworld plugins`)."
            + (f" Skipped as broken: {broken}." if broken else "")
        )

    def __str__(self) -> str:
        return self.args[0]


def check_contract(kind: str, name: str, obj: Any, owner: str = "?") -> None:
    """Check ``obj``, built for plugin ``name`` of ``kind``, against its protocol and
    capabilities (:mod:`agentworld.core.protocols`).

    A domain is also checked by :func:`agentworld.core.domain_contract.problem`: its hooks
    all implemented, its attributes of the types DomainBase annotates, its policies and task
    sampler.

    Raises:
        PluginContractError: a required member is missing, a capability is only partly
            there, or a domain check fails; the message names the plugin, its owner and what
            to change.
    """
    label = f"{kind.replace('_', ' ')} {name!r} (registered by {owner!r})"
    protocol = KIND_PROTOCOLS[kind]
    missing = missing_members(obj, protocol)
    if missing:
        defaulted = kind == "domain" and set(missing) <= DOMAIN_BASE_DEFAULTS
        raise PluginContractError(
            f"{label} lacks {', '.join(missing)} of the {protocol.__name__} protocol "
            f"(agentworld.core.protocols.{protocol.__name__})"
            + ("; define them, or subclass agentworld.core.domain_base.DomainBase, which "
               "defaults them (docs/plugins.md)" if defaulted else "")
        )
    _check_signatures(label, obj, protocol)
    for capability in CAPABILITIES.get(kind, ()):
        missing = missing_members(obj, capability)
        if missing and len(missing) < len(protocol_members(capability)):
            raise PluginContractError(
                f"{label} has part of capability {capability.__name__} but lacks "
                f"{', '.join(missing)} (agentworld.core.protocols.{capability.__name__})"
            )
        if not missing:
            _check_signatures(label, obj, capability)
    if kind == "domain":
        from agentworld.core import domain_contract  # imports pydantic: only when a domain is built

        why = domain_contract.problem(obj)
        if why is not None:
            raise PluginContractError(f"{label} {why} (docs/plugins.md)")
    if kind == "domain" and obj.name != name:  # episodes are recorded under a domain's .name
        raise PluginContractError(
            f"{label} has name {obj.name!r}; a domain's name must be the name it is registered "
            f"under ({name!r}), since recorded episodes name their domain by it"
        )


def _check_signatures(label: str, obj: Any, protocol: type) -> None:
    """Every method ``protocol`` declares must accept the calls callers make
    (:func:`agentworld.core.contracts.signature_mismatch`)."""
    why = signature_mismatch(obj, protocol)
    if why is not None:
        raise PluginContractError(f"{label}: {why} (agentworld.core.protocols.{protocol.__name__})")


@dataclass(slots=True)
class _Registry:
    kind: str
    factories: dict[str, Callable[..., Any]] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)
    priorities: dict[str, int | None] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)
    checked: set[str] = field(default_factory=set)
    #: Names registered twice without a priority to choose: the message for whoever asks.
    conflicts: dict[str, str] = field(default_factory=dict)


#: Plugins skipped as broken: entry-point (or plugin) name -> why.
skipped: dict[str, str] = {}


def _skip(name: str, why: str) -> None:
    skipped[name] = why
    logger.warning(
        "agentworld: skipped plugin %r: %s. Fix or uninstall it, or set "
        "AGENTWORLD_BLOCK_PLUGINS=%s to stop loading it.", name, why, name
    )


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
        try:
            pm.register(ep.load(), name=ep.name)
        except pluggy.PluginValidationError as error:
            _skip(ep.name, f"{ep.value}: {error} (the hooks: {HOOKS})")
        except Exception as error:  # noqa: BLE001 -- any import failure of a third party
            _skip(ep.name, f"{ep.value} failed to import: {type(error).__name__}: {error}")
    from agentworld.core.builtins import CorePlugin  # imports pydantic: only when loading

    if pm.get_plugin("core") is None:
        pm.register(CorePlugin(get_sim_backend), name="core")
    for plugin in pm.get_plugins():  # an @hookimpl under a name no spec has
        for caller in pm.get_hookcallers(plugin) or []:
            if not caller.has_spec() and caller.name not in APPLICATION_HOOKS:
                logger.warning(
                    "agentworld: plugin %r: its hook %r is not an agentworld hook and is "
                    "ignored (the hooks: %s)", pm.get_name(plugin), caller.name, HOOKS
                )
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

            def register(
                name: str,
                factory: Callable[..., Any],
                priority: int | None = None,
                _owner: str = owner,
            ) -> None:
                if not isinstance(name, str) or not name or not callable(factory):
                    raise PluginContractError(
                        f"plugin {_owner!r}: {KINDS[kind]} must call register(name, factory) "
                        f"with a non-empty name and a callable factory, got {name!r}, {factory!r}"
                    )
                if name in reg.factories and not _replaces(reg, name, _owner, priority):
                    return
                reg.factories[name] = factory
                reg.owners[name] = _owner
                reg.priorities[name] = priority

            try:
                impl.function(register=register)
            except Exception as error:  # noqa: BLE001 -- a third party's hook: skip it alone
                _skip(owner, f"{KINDS[kind]} raised {type(error).__name__}: {error}")
        _registries[kind] = reg
    return reg


def _replaces(reg: _Registry, name: str, owner: str, priority: int | None) -> bool:
    """Whether a second registration of ``name`` (by ``owner``, with ``priority``) wins over
    the first: the higher priority wins (no priority counts as 0). When neither gives a
    priority, or both give the same, neither wins: ``name`` is recorded as a conflict, which
    :func:`factory` raises as :class:`PluginContractError` for whoever asks for it."""
    first, second = reg.priorities[name], priority
    if (first is None and second is None) or (first or 0) == (second or 0):
        message = (
            f"{reg.kind.replace('_', ' ')} {name!r} is registered by both "
            f"{reg.owners[name]!r} and {owner!r}; uninstall one, block one with "
            "AGENTWORLD_BLOCK_PLUGINS, or register with a priority (register(name, factory, "
            "priority=N): the higher wins)"
        )
        reg.conflicts[name] = message
        logger.warning("agentworld: %s", message)
        return False
    return (second or 0) > (first or 0)


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
        UnknownPluginError: ``name`` is not registered; the message lists the installed ones
            (and the plugins skipped as broken).
        PluginContractError: two plugins register ``name`` and no priority chooses.
    """
    reg = _registry(kind)
    if name in reg.conflicts:
        raise PluginContractError(reg.conflicts[name])
    if name not in reg.factories:
        raise UnknownPluginError(kind.replace("_", " "), name, list(reg.factories))
    return reg.factories[name]


def get(kind: str, name: str, **options: Any) -> Any:
    """Build plugin object ``name`` of ``kind``, checked against its contract the first time.

    Without ``options`` the object is built once and cached, except for kinds in
    :data:`FRESH_KINDS` (trainers), which are built on every call.

    Raises:
        UnknownPluginError: ``name`` is not registered.
        PluginContractError: the built object does not meet its kind's contract.
    """
    reg = _registry(kind)
    make = factory(kind, name)
    if not (options or kind in FRESH_KINDS) and name in reg.cache:
        return reg.cache[name]
    try:
        obj = make(**options)
    except MissingHooksError as error:  # an abstract DomainBase/PolicyBase subclass
        label = f"{kind.replace('_', ' ')} {name!r} (registered by {reg.owners[name]!r})"
        raise PluginContractError(f"{label}: {error}") from None
    if name not in reg.checked:
        check_contract(kind, name, obj, reg.owners[name])
        reg.checked.add(name)
    if not options and kind not in FRESH_KINDS:
        reg.cache[name] = obj
    return obj


def get_domain(name: str) -> Domain:
    """The :class:`~agentworld.core.protocols.Domain` registered as ``name``.

    Raises:
        UnknownPluginError: ``name`` is not registered.
        PluginContractError: the domain does not meet its contract.
    """
    return get("domain", name)  # type: ignore[no-any-return]


def get_reward(name: str, **options: Any) -> RewardFn:
    """The :class:`~agentworld.core.protocols.RewardFn` registered as ``name``, built with
    ``options`` (cached when there are none).

    Raises:
        UnknownPluginError: ``name`` is not registered.
        PluginContractError: the reward does not meet its contract.
    """
    return get("reward", name, **options)  # type: ignore[no-any-return]


def get_trainer(name: str) -> Trainer:
    """A new :class:`~agentworld.core.protocols.Trainer` registered as ``name`` (built on
    every call).

    Raises:
        UnknownPluginError: ``name`` is not registered.
        PluginContractError: the trainer does not meet its contract.
    """
    return get("trainer", name)  # type: ignore[no-any-return]


def get_sim_backend(name: str) -> SimBackend:
    """The :class:`~agentworld.core.protocols.SimBackend` registered as ``name``.

    Raises:
        UnknownPluginError: ``name`` is not registered.
        PluginContractError: the backend does not meet its contract.
    """
    return get("sim_backend", name)  # type: ignore[no-any-return]


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
