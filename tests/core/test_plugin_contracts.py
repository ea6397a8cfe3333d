"""Plugin contracts: every hook and capability is tested and documented, and registrations
are checked against their protocol (in the manner of datasette's
``test_plugin_hooks_have_tests`` and ``test_plugin_hooks_are_documented``)."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.app import hookspecs as app_hookspecs
from agentworld.core import hookspecs, plugins, protocols
from agentworld.core.builtins import ConstantWorldModel
from agentworld.core.collect import world_model_contract
from agentworld.core.domain_base import DomainBase
from agentworld.core.evaluate import output_text
from agentworld.core.formats import wrap_observation
from agentworld.core.hookspecs import hookimpl
from agentworld.core.types import Action, Episode, Observation, Step, Task

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs" / "plugins.md"


def hook_specs() -> dict[str, object]:
    """Every hook of the project: the kernel's and the application's (``register_commands``)."""
    return {n: f for module in (hookspecs, app_hookspecs) for n, f in vars(module).items()
            if n.startswith("register_") and callable(f)}


def hook_names() -> list[str]:
    return sorted(hook_specs())


def capabilities() -> list[type]:
    every = [c for kind in protocols.CAPABILITIES.values() for c in kind]
    return [*every, *protocols.WORLD_MODEL_CAPABILITIES]


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@functools.cache
def test_functions() -> frozenset[str]:
    names: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        tree = ast.parse(path.read_text())
        names |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    return frozenset(names)


test_functions.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


@pytest.mark.parametrize("hook", hook_names())
def test_every_hook_has_a_test(hook: str) -> None:
    assert f"test_hook_{hook}" in test_functions(), f"hook {hook} has no test_hook_{hook}"


@pytest.mark.parametrize("capability", capabilities(), ids=lambda c: c.__name__)
def test_every_capability_has_a_test(capability: type) -> None:
    name = f"test_capability_{snake(capability.__name__)}"
    assert name in test_functions(), f"capability {capability.__name__} has no {name}"


@pytest.mark.parametrize("hook", hook_names())
def test_every_hook_is_documented_with_its_signature(hook: str) -> None:
    import inspect

    params = ", ".join(inspect.signature(hook_specs()[hook]).parameters)
    assert f"`{hook}({params})`" in DOCS.read_text(), f"docs/plugins.md lacks `{hook}({params})`"


@pytest.mark.parametrize("capability", capabilities(), ids=lambda c: c.__name__)
def test_every_capability_is_documented_with_its_members(capability: type) -> None:
    text = DOCS.read_text()
    heading = f"#### `{capability.__name__}`"
    assert heading in text, f"docs/plugins.md lacks a heading {heading}"
    section = text.split(heading, 1)[1].split("####", 1)[0]
    for member in protocols.protocol_members(capability):
        assert f"`{member}" in section, f"{capability.__name__}.{member} is not documented"


def test_readme_names_the_hooks() -> None:
    readme = (ROOT / "README.md").read_text()
    assert all(h in readme for h in hook_names())
    assert "register_policies" not in readme and "docs/plugins.md" in readme


# -- registration contracts ----------------------------------------------------------------------


@contextmanager
def registered(plugin: object, name: str) -> Iterator[None]:
    plugins.load_plugins().register(plugin, name=name)
    plugins.reset_registries()
    try:
        yield
    finally:
        plugins.pm.unregister(name=name)
        plugins.reset_registries()


class Minimal:
    """The required members of a Domain and nothing else."""

    name, version = "minimal", "0"

    def system_prompt(self, task: Task | None) -> str:
        return "You simulate a counter."

    def make_env(self, **kwargs):
        raise RuntimeError("no real environment here")

    def tasks(self):
        raise RuntimeError("no tasks")  # left to raise where it is used

    def policies(self) -> dict:
        return {}

    def score(self, predicted: str, reference: Observation) -> float:
        return float(predicted == reference.text)

    def action_type(self, action: Action) -> str:
        return "any"

    def describe(self) -> dict[str, str]:
        return {"environment": "none"}


class NoScore(Minimal):
    score = None  # type: ignore[assignment]  # declared, but not callable


class HalfRewarding(Minimal):
    defines_rewards = True  # but no verify


class Domains:
    @hookimpl
    def register_domains(self, register):
        register("minimal", Minimal)
        register("no-score", NoScore)
        register("half-rewarding", HalfRewarding)


def test_hook_register_domains() -> None:
    with registered(Domains(), "contract-domains"):
        assert {"minimal", "no-score", "half-rewarding"} <= set(plugins.names("domain"))
        domain = plugins.get_domain("minimal")
        assert isinstance(domain, protocols.Domain) and plugins.get_domain("minimal") is domain
        assert plugins.owner("domain", "minimal") == "contract-domains"
        assert not any(isinstance(domain, c) for c in protocols.DOMAIN_CAPABILITIES)
        with pytest.raises(plugins.PluginContractError,
                           match=r"domain 'no-score' \(registered by 'contract-domains'\) lacks "
                                 r"score of the Domain protocol"):
            plugins.get_domain("no-score")
        with pytest.raises(plugins.PluginContractError,
                           match="has part of capability RewardingDomain but lacks verify"):
            plugins.get_domain("half-rewarding")


def test_registration_with_a_bad_factory_names_the_plugin(caplog: pytest.LogCaptureFixture) -> None:
    class Bad:
        @hookimpl
        def register_rewards(self, register):
            register("", None)

    plugins.skipped.pop("bad-registration", None)
    with registered(Bad(), "bad-registration"):
        names = plugins.names("reward")  # the other plugins' rewards are still there
    assert names and "" not in names
    assert "must call register(name, factory)" in plugins.skipped.pop("bad-registration")
    assert "skipped plugin 'bad-registration'" in caplog.text


class Doubling:
    name = "doubling"

    def __init__(self, factor: float = 1.0):
        self.factor = factor

    def __call__(self, predictions, references, contexts) -> list[float]:
        return [self.factor * float(p == r) for p, r in zip(predictions, references, strict=True)]


def test_hook_register_rewards() -> None:
    class Rewards:
        @hookimpl
        def register_rewards(self, register):
            register("doubling", Doubling)
            register("nameless", lambda **o: (lambda p, r, c: [0.0] * len(p)))

    with registered(Rewards(), "contract-rewards"):
        assert plugins.get_reward("doubling")(["a", "b"], ["a", "c"], [{}, {}]) == [1.0, 0.0]
        assert plugins.get_reward("doubling", factor=0.5)(["a"], ["a"], [{}]) == [0.5]
        with pytest.raises(plugins.PluginContractError, match="lacks name of the RewardFn"):
            plugins.get_reward("nameless")


class Counting:
    """A stateful trainer: counts its own calls."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def train(self, episodes, config) -> str:
        self.calls += 1
        return f"{config['output_dir']}/{self.calls}"


def test_hook_register_trainers() -> None:
    class Trainers:
        @hookimpl
        def register_trainers(self, register):
            register("counting", Counting)

    with registered(Trainers(), "contract-trainers"):
        first, second = plugins.get_trainer("counting"), plugins.get_trainer("counting")
        assert first is not second  # stateful trainers are built fresh on every call
        assert first.train([], {"output_dir": "o"}) == "o/1"
        assert second.train([], {"output_dir": "o"}) == "o/1"
        assert not isinstance(first, protocols.ConfigurableTrainer)


def test_hook_register_sim_backends() -> None:
    backend = plugins.get_sim_backend("copy-previous")
    assert isinstance(backend, protocols.SimBackend)
    world_model = backend.load(None)
    env = backend.make_env(world_model, domain=plugins.get_domain("frozenlake-4x4"))
    task = plugins.get_domain("frozenlake-4x4").tasks().sample(1, seed=0)[0]
    first, _ = env.reset(options={"task": task})
    observation, *_ = env.step("left")
    assert observation == first  # copy-previous repeats the last observation

    class Broken:
        @hookimpl
        def register_sim_backends(self, register):
            register("loader-only", lambda: type("LoaderOnly", (), {"name": "x", "load": len})())

    with registered(Broken(), "contract-backends"):
        with pytest.raises(plugins.PluginContractError, match="lacks make_env of the SimBackend"):
            plugins.get_sim_backend("loader-only")


def test_hook_register_commands() -> None:
    from agentworld.app.cli import app

    class Commands:
        @hookimpl
        def register_commands(self, cli):
            @cli.command("contract-hello")
            def hello(name: str = "world") -> None:
                print(f"hello {name}")

    plugins.load_plugins().register(Commands(), name="contract-commands")
    try:
        for impl in plugins.pm.hook.register_commands.get_hookimpls():
            if plugins.pm.get_name(impl.plugin) == "contract-commands":
                impl.function(cli=app)  # what cli.main() does for every plugin
        result = CliRunner().invoke(app, ["contract-hello", "--name", "plugins"])
        assert result.exit_code == 0 and "hello plugins" in result.output
    finally:
        plugins.pm.unregister(name="contract-commands")
        kept = [c for c in app.registered_commands if c.name != "contract-hello"]
        app.registered_commands[:] = kept


# -- capabilities, each at the call site that uses it ------------------------------------------


class BaseCounter(DomainBase):
    """A DomainBase subclass with the required hooks only: every optional hook absent,
    although it has every capability's members (the base class defines them all)."""

    name, version, has_environment = "base-counter", "0", False

    def system_prompt(self, task: Task | None) -> str:
        return "You simulate a counter."

    def tasks(self):
        return self  # its own sampler

    def sample(self, n: int, *, seed: int) -> list[Task]:
        return [Task(id=f"count-{seed}-{i}", domain=self.name, instruction="count") for i in range(n)]

    def policies(self) -> dict:
        return {}


class BaseDomains:
    @hookimpl
    def register_domains(self, register):
        register("base-counter", BaseCounter)


class _PlainDomain:
    """A domain with none of the optional capabilities."""

    name, version = "plain", "0"

    def system_prompt(self, task) -> str:
        return ""


def test_capability_rewarding_domain() -> None:
    from agentworld.sim.outcome import resolve_reward_source

    lake, terminal = plugins.get_domain("frozenlake-4x4"), plugins.get_domain("terminal")
    assert isinstance(lake, protocols.RewardingDomain)
    assert isinstance(terminal, protocols.RewardingDomain)  # verify() on output and cwd
    assert not isinstance(_PlainDomain(), protocols.RewardingDomain)
    assert world_model_contract(lake)["rewards"] is True
    assert "rewards" not in world_model_contract(terminal)  # defines_rewards is False
    assert resolve_reward_source(None, lake, model_rewards=False) == "verifier"
    assert resolve_reward_source(None, terminal, model_rewards=False) == "verifier"
    assert resolve_reward_source(None, _PlainDomain(), model_rewards=False) == "none"
    with pytest.raises(ValueError, match="needs a domain with verify"):
        resolve_reward_source("verifier", _PlainDomain(), model_rewards=False)
    # a DomainBase subclass has verify() from the base class: only an override is a verifier
    assert resolve_reward_source(None, BaseCounter(), model_rewards=False) == "none"
    assert resolve_reward_source(None, plugins.get_domain("web"), model_rewards=False) == "none"
    assert resolve_reward_source(None, plugins.get_domain("swe"), model_rewards=False) == "verifier"
    with pytest.raises(ValueError, match="needs a domain with verify"):
        resolve_reward_source("verifier", BaseCounter(), model_rewards=False)


def test_capability_markov_domain() -> None:
    lake, terminal = plugins.get_domain("frozenlake-4x4"), plugins.get_domain("terminal")
    assert isinstance(lake, protocols.MarkovDomain)
    assert not isinstance(terminal, protocols.MarkovDomain)
    assert world_model_contract(lake)["history_window"] == 1
    assert "history_window" not in world_model_contract(terminal)


def test_capability_resettable_domain() -> None:
    from agentworld.sim.env import SimEnv

    lake = plugins.get_domain("frozenlake-4x4")
    task = lake.tasks().sample(1, seed=3)[0]
    env = SimEnv(ConstantWorldModel("copy-previous"), domain=lake)
    observation, _ = env.reset(options={"task": task})
    assert observation == lake.initial_observation(task) and observation.startswith("agent: row")
    terminal = SimEnv(ConstantWorldModel("copy-previous"), domain=plugins.get_domain("terminal"))
    assert terminal.reset()[0] == "user@sandbox:~$ "  # the real terminal's first observation
    blank = SimEnv(ConstantWorldModel("copy-previous"), domain=_PlainDomain())
    assert blank.reset(options={"task": task})[0] == ""  # no initial_observation: empty start
    based = SimEnv(ConstantWorldModel("copy-previous"), domain=BaseCounter())
    assert based.reset(options={"task": task})[0] == ""  # the same for a DomainBase subclass


def test_capability_discrete_action_domain() -> None:
    from agentworld.trainers.agents.envs import (
        EpisodeResult,
        Outcome,
        Source,
        domain_actions,
        is_success,
    )

    cliff = plugins.get_domain("cliffwalking")
    assert sorted(domain_actions(cliff)) == ["down", "left", "right", "up"]
    # CliffWalking's goal gives -1: its own is_success knows, the default rule would not
    reached = EpisodeResult(Source.REAL, -13.0, 13, Outcome.TERMINATED, -1.0)
    assert is_success(cliff, reached)
    with pytest.raises(ValueError, match="'terminal' has no finite action list"):
        domain_actions(plugins.get_domain("terminal"))


def test_capability_explaining_domain() -> None:
    from agentworld.core.rationales import check_domain

    terminal = plugins.get_domain("terminal")
    assert isinstance(terminal, protocols.ExplainingDomain)
    shown = Observation(text="/home/user\nuser@sandbox:~$ ")
    step = Step(action=Action(text="pwd"), observation=shown)
    assert terminal.explain(step, None)
    check_domain([], "terminal")  # does not raise
    with registered(Domains(), "contract-domains"):
        with pytest.raises(ValueError, match="has no explain"):
            check_domain([], "minimal")
    with registered(BaseDomains(), "base-domains"):  # before any model is loaded
        with pytest.raises(ValueError, match="'base-counter' has no explain"):
            check_domain([], "base-counter")


def test_capability_consistency_domain() -> None:
    from agentworld.core.evaluate import transitions

    terminal = plugins.get_domain("terminal")
    assert isinstance(terminal, protocols.ConsistencyDomain)
    prompt = "user@sandbox:~$ "
    steps = [
        Step(action=Action(text="x=hi"), observation=Observation(text=prompt)),
        Step(action=Action(text="echo $x"), observation=Observation(text="hi\n" + prompt)),
    ]
    episode = Episode(id="e", domain="terminal", initial_observation=Observation(text=prompt),
                      steps=steps)
    assert 1 in terminal.consistency_turns(episode)
    assert [t.consistency for t in transitions([episode], terminal)] == [False, True]
    frozen = plugins.get_domain("frozenlake-4x4")  # no such capability: an empty subset
    assert [t.consistency for t in transitions([episode], frozen)] == [False, False]


def test_capability_family_domain() -> None:
    from agentworld.core.holdout import action_families

    terminal = plugins.get_domain("terminal")
    assert isinstance(terminal, protocols.FamilyDomain)
    assert "grep" in action_families(Action(text="ls | grep x"), terminal)
    frozen = plugins.get_domain("frozenlake-4x4")
    assert not isinstance(frozen, protocols.FamilyDomain)
    assert action_families(Action(text="left"), frozen) == {frozen.action_type(Action(text="left"))}


def test_capability_text_explaining_domain() -> None:
    from agentworld.sim.backends.hf import _explainer

    assert _explainer("terminal")("cat a.txt", "user@sandbox:~$ ")
    assert _explainer("frozenlake-4x4") is None  # explains steps, but not from text
    with registered(BaseDomains(), "base-domains"):
        assert _explainer("base-counter") is None
    page = ("URL: http://shop.test/\nFocused element: none\n\nRootWebArea 'Shop'\n"
            "\t[12] link 'Blue mug'\n\t[13] button 'Add to cart'")
    rationale = _explainer("web")("click('12')", page)  # a web sim of a reasoning="domain" model
    assert rationale == "The action click('12') acts on [12] link 'Blue mug'."


def test_capability_output_domain() -> None:
    terminal = plugins.get_domain("terminal")
    shown = Observation(text="a.txt\nuser@sandbox:~/docs$ ")
    assert output_text(shown, terminal).strip() == "a.txt"
    assert output_text(shown, plugins.get_domain("frozenlake-4x4")) == shown.text
    empty = ConstantWorldModel("empty", terminal)
    messages = [{"role": "system", "content": "You simulate a terminal."},
                {"role": "user", "content": "ls"},
                {"role": "assistant", "content": wrap_observation(shown.text)},
                {"role": "user", "content": "touch b"}]
    predicted = empty.predict([messages])[0].observation
    assert predicted == terminal.empty_observation(shown.text)
    assert ConstantWorldModel("empty", None).predict([messages])[0].observation == ""


def test_capability_determinism_domain() -> None:
    from agentworld.rewards.hybrid import Hybrid

    hybrid = Hybrid(weights={"exact_match": 1.0})
    plain = {"domain": "frozenlake-4x4", "action": "left"}
    slippery = {"domain": "frozenlake-4x4-slippery", "action": "left"}
    assert hybrid.is_deterministic("x", plain) is True
    assert hybrid.is_deterministic("x", slippery) is False
    assert hybrid.is_deterministic("x", {"domain": "frozenlake-4x4-slippery", "action": "fly"})
    # a DomainBase domain that does not say (mcp) falls back to the configured action types
    typed = Hybrid(weights={"exact_match": 1.0}, deterministic_action_types={"mcp": ["malformed"]})
    assert typed.is_deterministic("x", {"domain": "mcp", "action": "not a call"}) is True
    assert typed.is_deterministic("x", {"domain": "mcp", "action": '{"name": "a"}'}) is False


def test_capability_configuring_domain(tmp_path) -> None:
    from agentworld.core.domain_base import domain_hooks

    (tmp_path / "a.md").write_text("# Alpha\n\nThe alpha widget weighs 42 grams on a scale.\n")
    search = domain_hooks(plugins.get_domain("search"))  # a DomainBase
    assert search.for_environment({}) is None
    configured = search.for_environment({"corpus": str(tmp_path)})
    [task] = configured.tasks().sample(1, seed=0)
    assert task.setup["hops"][0]["doc"] == "a.md"
    history = tmp_path / "history"
    history.write_text("ls\n")
    terminal = domain_hooks(plugins.get_domain("terminal"))  # structural: adapted
    assert terminal.for_environment({"max_steps": 5}) is None
    assert list(terminal.for_environment({"commands": str(history)}).policies()) == ["history"]
    lake = domain_hooks(plugins.get_domain("frozenlake-4x4"))  # without the capability
    assert lake.for_environment({"render_mode": "ansi"}) is None


def test_capability_offline_domain(monkeypatch) -> None:
    from agentworld.app.cli import app, console

    monkeypatch.setattr(console, "width", 250)  # one table row per line
    names = plugins.names("domain")
    offline = [n for n in names if isinstance(plugins.get_domain(n), protocols.OfflineDomain)]
    result = CliRunner().invoke(app, ["domains"])
    assert result.exit_code == 0
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines()
            if line.count("│") > 2 and line.split("│")[1].strip() in names}
    for name in names:
        domain = plugins.get_domain(name)
        data_only = isinstance(domain, protocols.OfflineDomain) and not domain.has_environment
        assert ("no (data-only)" in rows[name]) == data_only
        if data_only:
            with pytest.raises(RuntimeError, match="data-only"):
                domain.make_env()
    assert "frozenlake-4x4" in rows and "frozenlake-4x4" not in offline


class Judge:
    """A model-based reward (here it only measures length, but it says it is model-based)."""

    name, model_based = "toy_judge", True

    def __call__(self, predictions, references, contexts) -> list[float]:
        return [float(p is not None and len(p) == len(r)) for p, r in zip(predictions, references)]


class Judges:
    @hookimpl
    def register_rewards(self, register):
        register("toy_judge", Judge)


def test_capability_model_based_reward() -> None:
    from agentworld.rewards.hybrid import Hybrid

    with registered(Judges(), "contract-judges"):
        assert isinstance(plugins.get_reward("toy_judge"), protocols.ModelBasedReward)
        assert not isinstance(plugins.get_reward("exact_match"), protocols.ModelBasedReward)
        hybrid = Hybrid(weights={"exact_match": 1.0, "toy_judge": 1.0})
        assert hybrid.model_based == {"toy_judge"}
        # a deterministic transition is scored by the rule alone: exact 0 -> 0, not 0.5
        result = hybrid.evaluate(["ab"], ["xy"], [{"domain": "frozenlake-4x4", "action": "left"}])
        assert result.scores == [0.0] and result.components["toy_judge"] == [None]


def test_capability_component_reward() -> None:
    from agentworld.rewards.hybrid import Hybrid

    hybrid = Hybrid(weights={"exact_match": 1.0, "line_f1": 1.0})
    assert isinstance(hybrid, protocols.ComponentReward)
    assert not isinstance(plugins.get_reward("exact_match"), protocols.ComponentReward)
    result = hybrid.evaluate(["a\nb"], ["a\nc"], [{}])
    assert result.components == {"exact_match": [0.0], "line_f1": [0.5]}
    assert result.scores == [pytest.approx(0.25)]


def test_capability_configurable_trainer() -> None:
    agent = plugins.get_trainer("agent")
    assert isinstance(agent, protocols.ConfigurableTrainer)
    assert any(key == "episodes" for key, _, _ in agent.options())
    with pytest.raises(ValueError, match="no_such_option"):
        agent.check_options({"no_such_option": 1})


def test_capability_experience_trainer() -> None:
    from agentworld.app.cli import app

    agent = plugins.get_trainer("agent")
    assert isinstance(agent, protocols.ExperienceTrainer) and not agent.needs_data
    assert not isinstance(plugins.get_trainer("cpt"), protocols.ExperienceTrainer)
    result = CliRunner().invoke(app, ["train", "cpt", "--model", "tiny-test", "--output-dir", "o"])
    assert result.exit_code == 2 and "pass --data URL" in result.output


def test_capability_episodic_world_model() -> None:
    from agentworld.sim.simulator import Simulator

    class Episodic(ConstantWorldModel):
        def __init__(self) -> None:
            super().__init__("copy-previous")
            self.events: list[tuple[str, ...]] = []

        def predict(self, requests, *, max_new_tokens=None, episode_ids=None):
            self.events.append(("predict", *episode_ids))
            return super().predict(requests, max_new_tokens=max_new_tokens)

        def fork_episode(self, source: str, new: str) -> None:
            self.events.append(("fork", source, new))

        def close_episode(self, episode_id: str) -> None:
            self.events.append(("close", episode_id))

    world_model = Episodic()
    assert isinstance(world_model, protocols.EpisodicWorldModel)
    assert not isinstance(ConstantWorldModel("copy-previous"), protocols.EpisodicWorldModel)
    sim = Simulator(world_model)
    first = sim.open_sync("You simulate a counter.", "0")
    second = sim.fork_sync(first)
    sim.close_sync(first)
    assert world_model.events == [("fork", first, second), ("close", first)]
