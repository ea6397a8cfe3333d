"""A third-party domain plugin written carelessly, installed for real (a ``*.dist-info`` with
``entry_points.txt`` on ``sys.path``) and run through the ``agentworld`` CLI in a fresh
interpreter: a capability declared and not implemented, an options class that its own
defaults or ``make_env`` disagree with, and, at collection, an environment that returns
Gymnasium 0.21's 4-tuple, a ``reset`` without its info, a non-text observation, a step that
raises, a sampler of dicts, a ``None`` system prompt, a policy that returns a ``str``. Each is
one ``error:`` line naming the domain, the plugin, the member and what would be valid, with
exit status 2 and no traceback; a careful plugin (numpy flags, ``ObservationText``) collects
as before. Each of these went wrong on the old code: an unpacking error without a name, a
pydantic dump, a traceback ending in the collection loop, or silently recorded episodes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from plugin_sites import plugin_site

PLUGIN = '''
import numpy as np
from agentworld.core.domain_base import DomainBase, PolicyBase
from agentworld.core.hookspecs import hookimpl
from agentworld.core.options import EnvOptions, Field
from agentworld.core.types import Action, Observation, ObservationText, Task


class Env:
    def __init__(self, mode="ok"):
        self.mode, self.n = mode, 0

    def reset(self, *, seed=None, options=None):
        self.n = 0
        return "ready" if self.mode == "reset_str" else (ObservationText("ready"), {})

    def step(self, action):
        self.n += 1
        done = np.bool_(self.n >= 2)
        if self.mode == "raise":
            return {}["missing key"]
        if self.mode == "four":
            return Observation(text="x"), 0.0, bool(done), {}
        if self.mode == "int_obs":
            return 42, 0.0, bool(done), False, {}
        return Observation(text=action.text.upper()), np.float32(1.0), done, False, {}

    def close(self):
        pass


class Tasks:
    def __init__(self, dicts=False):
        self.dicts = dicts

    def sample(self, n, *, seed):
        if self.dicts:
            return [{"id": str(i), "instruction": "go"} for i in range(n)]
        return [Task(id=f"t{seed}-{i}", domain="x", instruction="go") for i in range(n)]


class Words(PolicyBase):
    name = "words"

    def __init__(self, as_str=False):
        self.as_str = as_str

    def act(self, task, history):
        return "go" if self.as_str else Action(text="go")


class Base(DomainBase):
    version = "1"
    mode = "ok"

    def system_prompt(self, task):
        return None if self.mode == "none_prompt" else "You simulate a shouting echo."

    def make_env(self, **kwargs):
        return Env(mode=self.mode)

    def tasks(self):
        return Tasks(dicts=self.mode == "dict_tasks")

    def policies(self):
        return {"words": Words(as_str=self.mode == "str_action")}


def domain(name, **members):
    return type(name.replace("-", "_"), (Base,), {"name": name, **members})


class Options(EnvOptions):
    max_steps: int = Field(5, ge=1)


class BadDefault(EnvOptions):
    max_steps: int = "five"


class Typo(Base):
    name, env_options = "typo", Options

    def make_env(self, max_step=5):  # the option is max_steps
        return Env()


class Structural:  # no DomainBase, and none of score, action_type, describe
    name, version = "structural", "1"

    def system_prompt(self, task):
        return "s"

    def make_env(self, **kwargs):
        return Env()

    def tasks(self):
        return Tasks()

    def policies(self):
        return {"words": Words()}


DOMAINS = [
    domain("good"), domain("four", mode="four"), domain("reset-str", mode="reset_str"),
    domain("int-obs", mode="int_obs"), domain("raises", mode="raise"),
    domain("dict-tasks", mode="dict_tasks"), domain("none-prompt", mode="none_prompt"),
    domain("str-action", mode="str_action"), domain("verifier", has_verifier=True),
    domain("rationales", has_rationales=True),
    domain("offline", has_environment=False), domain("bad-default", env_options=BadDefault),
    Typo, domain("str-score", score=lambda self, predicted, reference: "yes"),
    domain("none-kind", action_type=lambda self, action: None),
    domain("four-actions", mode="four", actions=["go", "stop"]), Structural,
]


@hookimpl
def register_domains(register):
    for cls in DOMAINS:
        register(cls.name, cls)
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return plugin_site(tmp_path_factory.mktemp("site"), "careless-plugin", {"careless": PLUGIN})


def cli(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "400"}
    command = [sys.executable, "-c", "from agentworld.app.cli import main; main()", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def collect(site: Path, tmp_path: Path, name: str) -> subprocess.CompletedProcess[str]:
    return cli(site, "collect", "--domain", name, "--episodes", "2", "--workers", "1",
               "--out", str(tmp_path / f"{name}.jsonl"))


def error_line(got: subprocess.CompletedProcess[str], name: str) -> str:
    """The one ``error:`` line of a refused command, checked: exit 2, no traceback, names
    the domain and its plugin."""
    assert got.returncode == 2, got.stdout[-2000:] + got.stderr[-2000:]
    out = got.stdout + got.stderr
    assert "Traceback" not in out, out[-3000:]
    [line] = [x for x in got.stderr.splitlines() if x.startswith("error:")]
    assert f"domain '{name}' (registered by 'careless')" in line, line
    return line


@pytest.mark.parametrize(
    ("name", "wanted"),
    [
        ("four", ["its environment's step('go') returned a tuple of 4, not (observation, "
                  "reward, terminated, truncated, info)", "done is split"]),
        ("reset-str", ["its environment's reset(*, seed, options) returned str, not the tuple "
                       "(observation, info)"]),
        ("int-obs", ["step('go') returned observation 42 (int), not an "
                     "agentworld.core.types.Observation or a str"]),
        ("raises", ["its environment's step('go') raised KeyError: 'missing key'",
                    "careless.py:", "in step)"]),
        ("dict-tasks", ["tasks().sample(2, seed=0) returned a dict at index 0, not an "
                        "agentworld.core.types.Task"]),
        ("none-prompt", ["system_prompt(task) returned None (NoneType), not a str"]),
        ("str-action", ["policy 'words''s act(task, history) returned 'go' (str), not an "
                        "agentworld.core.types.Action or None (wrap it: Action(text=...))"]),
    ],
)  # fmt: skip
def test_a_collection_names_the_plugin_and_member_that_broke_it(
    site: Path, tmp_path: Path, name: str, wanted: list[str]
) -> None:
    line = error_line(collect(site, tmp_path, name), name)
    for part in wanted:
        assert part in line, line
    assert not (tmp_path / f"{name}.jsonl").exists()  # nothing written, not even the part file
    assert list(tmp_path.iterdir()) == []


def test_an_agent_trained_on_the_real_environment_names_the_plugin(
    site: Path, tmp_path: Path
) -> None:
    """``train agent --env real:NAME`` (tabular Q-learning on the domain's actions) steps the
    same careless environment: the same one line (it was "not enough values to unpack")."""
    got = cli(site, "train", "agent", "--env", "real:four-actions", "--out",
              str(tmp_path / "agent"), "--set", "episodes=2", "-q")
    line = error_line(got, "four-actions")
    assert "its environment's step(" in line and "returned a tuple of 4, not (observation, " \
        "reward, terminated, truncated, info)" in line, line


def test_a_careful_plugin_collects_with_numpy_flags_and_observation_text(
    site: Path, tmp_path: Path
) -> None:
    got = collect(site, tmp_path, "good")
    assert got.returncode == 0, got.stderr[-3000:]
    from agentworld.core.io import read_episodes

    episodes = read_episodes(str(tmp_path / "good.jsonl"))
    assert [[s.observation.text for s in e.steps] for e in episodes] == [["GO", "GO"]] * 2
    assert episodes[0].steps[-1].terminated is True and episodes[0].steps[0].reward == 1.0
    assert episodes[0].initial_observation.text == "ready"


@pytest.mark.parametrize(
    ("name", "wanted"),
    [
        ("verifier", "sets has_verifier = True but does not override verify"),
        ("rationales", "sets has_rationales = True but does not override explain"),
        ("offline", "sets has_environment = False but defines make_env"),
        ("bad-default", "declares env_options BadDefault whose default max_steps='five' its "
                        "own type refuses"),
        ("typo", "declares env_options Options with max_steps, which make_env does not take"),
        ("str-score", "score('x', Observation(text='x')) returned 'yes' (str); a score is a "
                      "float in [0, 1]"),
        ("none-kind", "action_type(Action(text='x')) returned None (NoneType); an action type "
                      "is a str"),
        ("structural", "lacks score, action_type, describe of the Domain protocol "
                       "(agentworld.core.protocols.Domain); define them, or subclass "
                       "agentworld.core.domain_base.DomainBase, which defaults them"),
    ],
)  # fmt: skip
def test_a_declaration_the_plugin_does_not_keep_is_refused_when_it_is_built(
    site: Path, tmp_path: Path, name: str, wanted: str
) -> None:
    line = error_line(collect(site, tmp_path, name), name)
    assert wanted in line, line


def test_agentworld_domains_lists_each_broken_declaration_and_the_good_domain(site: Path) -> None:
    got = cli(site, "domains")
    assert got.returncode == 0, got.stderr[-3000:]
    rows = {line.split("│")[1].strip(): line for line in got.stdout.splitlines() if "│" in line}
    assert "yes" in rows["good"] and "yes" in rows["terminal"]
    for name in ("verifier", "rationales", "offline", "bad-default", "typo", "str-score",
                 "none-kind"):
        assert "broken" in rows[name], rows[name]


@contextmanager
def registered(domain_cls: type) -> Iterator[object]:
    """``domain_cls`` built by the plugin manager while the plugin ``careless-sim`` registers
    it (checked against its contract on the way)."""
    from agentworld.core import plugins
    from agentworld.core.hookspecs import hookimpl

    class Plugin:
        @hookimpl
        def register_domains(self, register):
            register(domain_cls.name, domain_cls)

    pm = plugins.load_plugins()
    pm.register(Plugin(), name="careless-sim")
    plugins.reset_registries()
    try:
        yield plugins.get_domain(domain_cls.name)
    finally:
        pm.unregister(name="careless-sim")
        plugins.reset_registries()


def simulated(domain: object, **options):
    """A ``SimEnv`` of ``domain`` on the real copy-previous baseline world model."""
    from agentworld.core.builtins import ConstantWorldModel
    from agentworld.sim import SimEnv

    return SimEnv(ConstantWorldModel("copy-previous"), domain=domain, **options)


def _echo(**members):
    from agentworld.core.domain_base import DomainBase
    from agentworld.core.types import Task

    class Tasks:
        def sample(self, n, *, seed):
            return [Task(id=f"t{i}", domain="sim-echo", instruction="go") for i in range(n)]

    base = {"name": "sim-echo", "version": "1", "has_environment": False,
            "system_prompt": lambda self, task: "echo", "tasks": lambda self: Tasks(),
            "policies": lambda self: {}}
    return type("SimEcho", (DomainBase,), {**base, **members})


def test_a_simulated_episode_names_a_non_text_initial_observation_and_a_bad_verdict() -> None:
    from agentworld.core.errors import PluginContractError
    from agentworld.core.types import Action

    with registered(_echo(initial_observation=lambda self, task: 7)) as domain:
        with pytest.raises(PluginContractError) as got:
            simulated(domain).reset(seed=0)  # was pydantic's ValidationError, Observation.text
    assert str(got.value) == (
        "domain 'sim-echo' (registered by 'careless-sim'): initial_observation(task) returned 7 "
        "(int), not a str or None (docs/plugins.md, ResettableDomain)")
    with registered(_echo(initial_observation=lambda self, task: "ready",
                          verify=lambda self, observation, task: 1.0)) as domain:
        env = simulated(domain, reward_source="verifier")
        assert env.reset(seed=0)[0] == "ready"
        with pytest.raises(PluginContractError, match=r"domain 'sim-echo' \(registered by "
                           r"'careless-sim'\): verify\(observation, task\) returned 1.0 "
                           r"\(float\), not None or \(reward: float, terminated: bool\)"):
            env.step(Action(text="go"))  # was "cannot unpack non-iterable float object"
    with registered(_echo(initial_observation=lambda self, task: "ready",
                          verify=lambda self, observation, task: (1, observation == "ready"))
                    ) as domain:  # fmt: skip
        good = simulated(domain, reward_source="verifier")
        good.reset(seed=0)
        assert good.step(Action(text="go"))[:3] == ("ready", 1.0, True)  # copy-previous


def test_a_served_real_environment_names_the_plugin_to_the_client() -> None:
    """``agentworld serve --real`` of a careless domain: the OpenEnv client's error names the
    domain, its plugin and the call (it was "ValueError: not enough values to unpack"), with
    no host path; the session goes on after it."""
    pytest.importorskip("openenv")
    from agentworld.core.types import Observation
    from agentworld.sim.openenv import RealEnvFactory, create_app
    from agentworld.sim.server.thread import ServerThread
    from openenv.core.generic_client import GenericEnvClient

    class FourTuple:
        def reset(self, *, seed=None, options=None):
            return Observation(text="ready"), {}

        def step(self, action):
            if action.text == "boom":
                raise KeyError("boom")
            return Observation(text="x"), 0.0, False, {}

        def close(self):
            pass

    with registered(_echo(make_env=lambda self, **kw: FourTuple(), has_environment=True)
                    ) as domain, ServerThread(create_app(RealEnvFactory(domain), name="sim-echo",
                                                         max_sessions=2)) as server:  # fmt: skip
        with GenericEnvClient(base_url=f"http://{server.host}:{server.port}").sync() as env:
            assert env.reset(seed=0).observation["text"] == "ready"
            with pytest.raises(RuntimeError) as got:
                env.step({"text": "go"})
            message = str(got.value)
            assert ("domain 'sim-echo' (registered by 'careless-sim'): its environment's "
                    "step('go') returned a tuple of 4, not (observation, reward, terminated, "
                    "truncated, info)") in message, message
            assert env.reset(seed=1).observation["text"] == "ready"
            with pytest.raises(RuntimeError) as got:
                env.step({"text": "boom"})
            message = str(got.value)
            assert "'careless-sim'): its environment's step('boom') raised KeyError: 'boom'" in \
                message, message
            assert __file__ not in message  # no host path for the client
            assert env.reset(seed=2).observation["text"] == "ready"
