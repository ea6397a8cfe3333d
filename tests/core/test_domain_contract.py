"""The domain contract: base classes with every hook's default, signature checks, duplicate
names, and no member found by a probe that no protocol declares (issue 31, step 0)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from agentworld.core import plugins, protocols, world_models
from agentworld.core.domain_base import DomainBase, PolicyBase, domain_hooks
from agentworld.core.hookspecs import hookimpl
from agentworld.core.types import Action, Episode, Observation, Step, Task

ROOT = Path(__file__).parents[2]


@contextmanager
def registered(*pairs: tuple[object, str]) -> Iterator[None]:
    pm = plugins.load_plugins()
    for plugin, name in pairs:
        pm.register(plugin, name=name)
    plugins.reset_registries()
    try:
        yield
    finally:
        for _, name in pairs:
            pm.unregister(name=name)
        plugins.reset_registries()


class Tasks:
    def sample(self, n: int, *, seed: int) -> list[Task]:
        return [Task(id=f"c{seed}-{i}", domain="counter", instruction="count") for i in range(n)]


class Counter(DomainBase):
    """A domain written against the base class: the required hooks, no real environment."""

    name, version = "counter", "1"
    has_environment = False

    def system_prompt(self, task: Task | None) -> str:
        return "You simulate a counter."

    def tasks(self) -> Tasks:
        return Tasks()

    def policies(self) -> dict:
        return {}


class OldExplain(Counter):
    def explain(self, step, previous_state):  # type: ignore[override]  # no history
        return "old"


class ShortScore(Counter):
    def score(self, predicted):  # type: ignore[override]  # no reference
        return 0.0


def _registrar(name: str, factory, priority=None):
    class Plugin:
        @hookimpl
        def register_domains(self, register):
            if priority is None:
                register(name, factory)
            else:
                register(name, factory, priority=priority)

    return Plugin()


def test_a_base_class_domain_answers_absent_for_every_optional_hook() -> None:
    with registered((_registrar("counter", Counter), "counter-plugin")):
        domain = plugins.get_domain("counter")
    assert domain_hooks(domain) is domain
    step = Step(action=Action(text="inc 2"), observation=Observation(text="2"))
    episode = Episode(id="e", domain="counter", initial_observation=Observation(text="0"),
                      steps=[step])  # fmt: skip
    assert domain.actions is None and domain.initial_observation(None) is None
    assert domain.explain(step, None) is None and domain.explain_text("inc", "0") is None
    assert domain.verify("2", None) is None and domain.is_deterministic(step.action) is None
    assert not (domain.has_verifier or domain.has_rationales or domain.has_text_rationales)
    assert domain.consistency_turns(episode) == []
    assert domain.command_families(Action(text="inc 2")) == {"inc"}
    assert domain.action_type(Action(text="x", name="tool")) == "tool"
    assert domain.score("2", Observation(text="2")) == 1.0 and not domain.defines_rewards
    with pytest.raises(RuntimeError, match="no real environment"):
        domain.make_env()

    class Verifying(Counter):
        def verify(self, observation, task):
            return (1.0, True) if observation == "10" else None

    assert Verifying().has_verifier and not Verifying().has_rationales


class Bare(DomainBase):
    name, version = "bare", "1"


class NoEnv(Counter):
    has_environment = True  # but no make_env


def test_a_subclass_that_implements_no_hook_is_refused_naming_them() -> None:
    with registered((_registrar("bare", Bare), "bare-plugin"),
                    (_registrar("counter", NoEnv), "noenv-plugin")):  # fmt: skip
        with pytest.raises(plugins.PluginContractError,
                           match=r"domain 'bare' \(registered by 'bare-plugin'\): .*Bare does "
                                 r"not implement make_env, policies, system_prompt, tasks"):
            plugins.get_domain("bare")
        with pytest.raises(plugins.PluginContractError,
                           match=r"NoEnv does not implement make_env.*has_environment = False"):
            plugins.get_domain("counter")
    with pytest.raises(TypeError, match="does not implement act, required of a PolicyBase"):
        PolicyBase()  # type: ignore[abstract]
    with pytest.raises(TypeError, match="Bare does not implement"):
        Bare()  # type: ignore[abstract]  # outside the plugin manager too, as abc does


class Policy(PolicyBase):
    name = "p"

    def act(self, task, history):
        return Action(text="inc 1")


class OldPolicy(PolicyBase):
    name = "old"

    def act(self, observation):  # type: ignore[override]  # one parameter, not (task, history)
        return None


def _variant(**members):
    return type("Variant", (Counter,), members)


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ({"history_window": "two"}, r"has history_window = 'two', which is not int \| None"),
        ({"history_window": 0}, r"history_window = 0; it must be >= 1"),
        ({"defines_rewards": 1}, r"has defines_rewards = 1, which is not bool"),
        ({"actions": "left right"}, r"has actions = 'left right', which is not list\[str\] \| None"),
        ({"actions": ["left", 2]}, r"has actions = \['left', 2\]"),
        ({"version": 2}, r"has version = 2, which is not str"),
        ({"policies": lambda self: {"x": object()}},
         r"policies\(\)\['x'\] is a object lacking name, act of the Policy protocol"),
        ({"policies": lambda self: [Policy()]}, r"policies\(\) returned list, not a dict"),
        ({"policies": lambda self: {"old": OldPolicy()}},
         r"policies\(\)\['old'\]: act\(observation\) cannot be called as act\(task"),
        ({"tasks": lambda self: object()}, r"tasks\(\) returned a object lacking sample"),
    ],
)  # fmt: skip
def test_attribute_types_policies_and_samplers_are_checked(members: dict, message: str) -> None:
    with registered((_registrar("counter", _variant(**members)), "typed-plugin")):
        with pytest.raises(plugins.PluginContractError, match=r"domain 'counter' .*" + message):
            plugins.get_domain("counter")
    with registered((_registrar("counter", _variant(policies=lambda self: {"p": Policy()})),
                     "typed-plugin")):  # fmt: skip
        assert plugins.get_domain("counter").policies()["p"].name == "p"


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (OldExplain, r"explain\(step, previous_state\) cannot be called as "
                     r"explain\(step: 'Step', previous_state: .*history"),
        (ShortScore, r"score\(predicted\) cannot be called as score\(predicted: 'str', reference"),
    ],
)  # fmt: skip
def test_signatures_are_checked_not_only_names(cls: type, message: str) -> None:
    with registered((_registrar("bad", cls), "bad-plugin")):
        with pytest.raises(plugins.PluginContractError, match=message):
            plugins.get_domain("bad")


def test_a_duplicate_name_is_an_error_unless_a_priority_decides() -> None:
    with registered((_registrar("twin", Counter), "one"), (_registrar("twin", Counter), "two")):
        # only the contested name is unusable: the registry and every other domain still work
        with pytest.raises(plugins.PluginContractError, match="registered by both 'one' and 'two'"):
            plugins.get_domain("twin")
        assert plugins.get_domain("terminal").name == "terminal"
    with registered(
        (_registrar("twin", Counter), "low"), (_registrar("twin", OldExplain, priority=5), "high")
    ):
        assert plugins.owner("domain", "twin") == "high"
    # AgentWorldBench's data-only stand-ins register below the default: a real domain wins.
    with registered((_registrar("os", Counter), "real-os")):
        assert plugins.owner("domain", "os") == "real-os"
    assert plugins.owner("domain", "os") != "real-os"


# Attributes of other libraries' objects (transformers configs and models, torch, pydantic,
# pluggy's hook relay) that code here reads with getattr because they vary by version.
LIBRARY_ATTRIBUTES = {
    "activation_checkpointing_enable", "attn_logit_softcapping", "device", "eos_token_id",
    "generation_config", "get_decoder", "get_text_config", "head_dim", "keys", "layer_types",
    "layers", "max_position_embeddings", "model", "model_fields", "num_key_value_heads",
    "q_norm", "register_commands", "sliding_window", "use_sliding_window", "vocab_size", "xpu",
}  # fmt: skip
# Probes of our own objects that predate the rule; this set may only shrink.
KNOWN_DEBT = {
    "budget_clock", "config_cls", "error", "logprobs", "report_to",
    "simulated", "state", "stop", "text", "value",
}  # fmt: skip


def _declared() -> set[str]:
    names: set[str] = set()
    for module in (protocols, world_models):
        for value in vars(module).values():
            if isinstance(value, type) and getattr(value, "_is_protocol", False):
                names.update(protocols.protocol_members(value))
    return names


def _probes() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "packages").rglob("src/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id in ("getattr", "hasattr") and len(node.args) >= 2:
                member = node.args[1]
                if isinstance(member, ast.Constant) and isinstance(member.value, str):
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    found.setdefault(member.value, []).append(where)
    return found


def test_no_member_is_probed_that_no_protocol_declares() -> None:
    probes = _probes()
    undeclared = {
        name: where
        for name, where in probes.items()
        if name not in _declared() | LIBRARY_ATTRIBUTES | KNOWN_DEBT
    }
    assert undeclared == {}, "declare these hooks in a protocol (with a DomainBase default)"
    assert KNOWN_DEBT <= set(probes), f"gone from the code, drop from KNOWN_DEBT: {KNOWN_DEBT - set(probes)}"


def test_no_signature_is_inspected_outside_the_contract_check() -> None:
    users = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "packages").rglob("src/**/*.py")
        if "inspect.signature" in path.read_text()
    ]
    assert users == ["packages/core/src/agentworld/core/contracts.py"]


def test_a_domain_registered_under_another_name_than_its_own_is_refused() -> None:
    with registered((_registrar("renamed", Counter), "renaming-plugin")):
        with pytest.raises(plugins.PluginContractError, match="has name 'counter'.*'renamed'"):
            plugins.get_domain("renamed")


def test_no_call_site_asks_isinstance_against_a_domain_capability() -> None:
    """Every call site asks ``domain_hooks(domain)``: a DomainBase subclass has every
    capability's members, so ``isinstance(domain, RewardingDomain)`` would always say yes.
    Only the adapter of structural plugins (domain_base.py) may ask."""
    capabilities = {c.__name__ for c in protocols.DOMAIN_CAPABILITIES}
    found = []
    for path in sorted((ROOT / "packages").rglob("src/**/*.py")):
        if path.name == "domain_base.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "isinstance" and len(node.args) == 2):
                continue
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            names = {k.id if isinstance(k, ast.Name) else k.attr for k in kinds
                     if isinstance(k, ast.Name | ast.Attribute)}
            if names & capabilities:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == [], "ask domain_hooks(domain) instead"


def test_an_environment_is_checked_at_its_first_use() -> None:
    """``make_env`` cannot be called when the domain is built (it may start a sandbox), so what
    it returns is checked where collection first uses it."""
    from agentworld.core.collect import collect

    class NoStep:
        def reset(self, *, seed=None, options=None):
            return "0", {}

        def close(self) -> None:
            pass

    broken = _variant(has_environment=True, make_env=lambda self, **kw: NoStep(),
                      policies=lambda self: {"p": Policy()})  # fmt: skip
    with pytest.raises(plugins.PluginContractError,
                       match=r"domain 'counter': make_env\(\) returned a NoStep lacking step of "
                             r"the Environment protocol"):  # fmt: skip
        collect(broken(), 1, policies={"p": 1.0}, workers=1)
