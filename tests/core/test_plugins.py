"""The plugin system: built-ins and a third-party plugin register through entry points."""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from agentworld.core import plugins
from agentworld.core.hookspecs import hookimpl

EXAMPLE = Path(__file__).parents[2] / "examples" / "agentworld-domain-echo"


def install_as_entry_point(target: Path) -> dict[str, str]:
    """Make the example plugin importable with a real dist-info entry point under ``target``.

    This is what an installer writes; importlib.metadata discovers it from
    ``sys.path`` exactly as for a pip-installed plugin.
    """
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    dist = target / "agentworld_domain_echo-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: 0.1.0\n")
    eps = "".join(f"{k} = {v}\n" for k, v in project["entry-points"]["agentworld"].items())
    (dist / "entry_points.txt").write_text(f"[agentworld]\n{eps}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(target), str(EXAMPLE / "src"), env.get("PYTHONPATH", "")])
    return env


def cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from agentworld.app.cli import main; main()", *args],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_third_party_domain_is_listed_and_usable(tmp_path):
    env = install_as_entry_point(tmp_path / "site")
    env["COLUMNS"] = "200"
    listed = cli("domains", env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "echo" in listed.stdout and "in-process echo" in listed.stdout
    shown = cli("plugins", env=env, cwd=tmp_path)
    assert "agentworld-domain-echo" in shown.stdout and "register_domains" in shown.stdout
    out = tmp_path / "echo.jsonl"
    run = cli("collect", "--domain", "echo", "--episodes", "3", "--policy", "random=1",
              "--out", str(out), env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr + run.stdout
    from agentworld.core.io import read_episodes

    episodes = read_episodes(str(out))
    assert len(episodes) == 3
    assert episodes[0].steps[-1].action.text == "bye" and episodes[0].steps[-1].terminated
    first = episodes[0].steps[0]
    assert first.observation.text == first.action.text.upper()


def test_block_list_hides_a_plugin(tmp_path):
    env = install_as_entry_point(tmp_path / "site")
    env["AGENTWORLD_BLOCK_PLUGINS"] = "echo"
    listed = cli("collect", "--domain", "echo", "--episodes", "1", "--out", str(tmp_path / "x.jsonl"),
                 env=env, cwd=tmp_path)
    assert listed.returncode == 2
    assert "unknown domain 'echo'" in listed.stderr and "installed domains:" in listed.stderr


def test_unknown_name_lists_installed():
    with pytest.raises(plugins.UnknownPluginError) as info:
        plugins.get_sim_backend("no-such-backend")
    message = str(info.value)
    assert "unknown sim backend 'no-such-backend'" in message
    assert "copy-previous" in message and "empty" in message


class AlwaysOne:
    name = "always_one"

    def __call__(self, predictions, references, contexts):
        return [1.0] * len(predictions)


def test_registered_object_plugin_and_unregister():
    class Local:
        @hookimpl
        def register_rewards(self, register):
            register("always_one", AlwaysOne)

    plugin = Local()
    plugins.load_plugins().register(plugin, name="local-test")
    plugins.reset_registries()
    try:
        assert "always_one" in plugins.names("reward")
        assert plugins.owner("reward", "always_one") == "local-test"
        assert plugins.get_reward("always_one")(["a", "b"], ["x", "y"], [{}, {}]) == [1.0, 1.0]
    finally:
        plugins.pm.unregister(name="local-test")
        plugins.reset_registries()
    assert "always_one" not in plugins.names("reward")


def test_core_imports_fast_without_torch():
    """The kernel lists plugins without torch or the application's libraries; the CLI on top
    of it still starts within the same bound. Measured in CPU seconds of the process (work done,
    about 0.5 s here), not wall-clock, which a shared, loaded host stretches several-fold. The
    second run is measured: the first in a fresh clone also compiles every module's bytecode."""
    code = ("import sys, time; t=time.process_time(); import agentworld.core.plugins as p;"
            "p.names('domain'); kernel=time.process_time()-t;"
            "app=[m for m in ('typer', 'rich', 'matplotlib', 'scipy', 'pyarrow') if m in sys.modules];"
            "import agentworld.app.cli; cli=time.process_time()-t;"
            "print(kernel, cli, ','.join(app) or '-', 'torch' in sys.modules)")
    no_pyc = "PYTHONDONTWRITEBYTECODE"  # the warm-up writes the bytecode even where it is set
    subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60,
                   env={k: v for k, v in os.environ.items() if k != no_pyc})
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    kernel, cli, app_modules, torch_loaded = out.stdout.split()
    assert torch_loaded == "False", "listing plugins must not import torch"
    assert app_modules == "-", f"the kernel imported {app_modules} while listing plugins"
    assert float(kernel) < 2.0 and float(cli) < 2.0


def test_example_plugin_meets_its_contract(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE / "src"))
    from agentworld.core.domain_base import DomainBase, domain_hooks
    from agentworld.core.protocols import DOMAIN_CAPABILITIES
    from agentworld.core.types import Action
    from agentworld_echo import EchoDomain

    domain = EchoDomain()
    plugins.check_contract("domain", "echo", domain, "echo")
    # A DomainBase subclass has every capability, each with its default where not overridden.
    assert isinstance(domain, DomainBase) and domain_hooks(domain) is domain
    assert all(isinstance(domain, c) for c in DOMAIN_CAPABILITIES)
    assert domain.initial_observation(None) == "ready"
    assert domain.consistency_turns(None) == [] and not domain.defines_rewards
    env = domain.make_env()
    env.reset()
    assert env.step(Action(text="bye"))[0].text == "BYE"  # the boundary: always an Action
