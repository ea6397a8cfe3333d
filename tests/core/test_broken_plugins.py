"""Broken third-party plugins, installed for real (a ``*.dist-info`` with ``entry_points.txt``
on ``sys.path``, read by :mod:`importlib.metadata`), in a fresh interpreter each: one that
fails to import, one whose hook has the wrong parameter name, one whose hook raises, and a
misspelled hook. Each is skipped or reported with a warning naming it; the other plugins, and
the CLI, go on working."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_sites import plugin_site

PLUGINS = {
    "bad_import": "import no_such_module_here\n",
    "bad_argname": (
        "from agentworld.core.hookspecs import hookimpl\n"
        "@hookimpl\ndef register_domains(reg):\n    reg('never', object)\n"
    ),
    "bad_raises": (
        "from agentworld.core.hookspecs import hookimpl\n"
        "@hookimpl\ndef register_domains(register):\n    raise RuntimeError('boom in the hook')\n"
    ),
    "bad_typo": (
        "from agentworld.core.hookspecs import hookimpl\n"
        "@hookimpl\ndef register_domain(register):\n    register('typo', object)\n"
    ),
    "bad_name": (
        "from agentworld.core.domain_base import DomainBase\n"
        "from agentworld.core.hookspecs import hookimpl\n"
        "class Other(DomainBase):\n    name, version = 'other', '1'\n"
        "    has_environment = False\n"
        "    def system_prompt(self, task):\n        return ''\n"
        "    def tasks(self):\n        return self\n"
        "    def sample(self, n, *, seed):\n        return []\n"
        "    def policies(self):\n        return {}\n"
        "@hookimpl\ndef register_domains(register):\n    register('renamed', Other)\n"
    ),
    # written against the previous contract, where DomainBase defaulted make_env and policies
    "old_contract": (
        "from agentworld.core.domain_base import DomainBase\n"
        "from agentworld.core.hookspecs import hookimpl\n"
        "class Old(DomainBase):\n    name, version = 'old', '1'\n"
        "    def system_prompt(self, task):\n        return ''\n"
        "    def tasks(self):\n        return None\n"
        "@hookimpl\ndef register_domains(register):\n    register('old', Old)\n"
    ),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return plugin_site(tmp_path_factory.mktemp("site"), "bad-plugins", PLUGINS)


def run(site: Path, *args: str, **env_vars: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), **env_vars}
    command = [sys.executable, "-c", "from agentworld.app.cli import main; main()", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_broken_plugins_are_skipped_by_name_and_the_cli_goes_on(site: Path) -> None:
    got = run(site, "plugins")
    assert got.returncode == 0, got.stderr[-2000:]
    assert "terminal" in got.stdout  # the installed plugins are still listed
    err = got.stderr
    assert "Traceback" not in err
    assert "skipped plugin 'bad_import': bad_import failed to import: ModuleNotFoundError" in err
    assert "skipped plugin 'bad_argname'" in err and "register_domains(register)" in err
    assert "AGENTWORLD_BLOCK_PLUGINS=bad_import" in err
    assert "plugin 'bad_typo': its hook 'register_domain' is not an agentworld hook" in err


def test_a_raising_hook_is_skipped_alone_and_named_when_its_domain_is_asked_for(site: Path) -> None:
    got = run(site, "collect", "--domain", "typo", "--episodes", "1", "--out", "/dev/null")
    assert got.returncode == 2, got.stderr[-2000:]
    assert "Traceback" not in got.stderr + got.stdout
    assert "skipped plugin 'bad_raises': register_domains raised RuntimeError: boom" in got.stderr
    out = " ".join((got.stdout + got.stderr).split())
    assert "unknown domain 'typo'" in out and "Skipped as broken: bad_argname" in out


def test_blocked_plugins_are_not_loaded_and_not_warned_about(site: Path) -> None:
    got = run(site, "plugins", AGENTWORLD_BLOCK_PLUGINS=",".join(PLUGINS))
    assert got.returncode == 0 and "skipped" not in got.stderr and "bad_" not in got.stderr


def test_agentworld_domains_lists_a_broken_domain_as_broken_and_the_rest_as_usual(site: Path) -> None:
    got = run(site, "domains", COLUMNS="200")
    assert got.returncode == 0, got.stderr[-2000:]
    rows = {line.split("│")[1].strip(): line for line in got.stdout.splitlines() if "│" in line}
    assert "broken" in rows["renamed"] and "bad_name" in rows["renamed"]
    assert "yes" in rows["terminal"]
    assert "has name 'other'" in " ".join(got.stdout.split())


def test_a_plugin_written_against_the_previous_base_class_is_told_what_to_change(site: Path) -> None:
    got = run(site, "collect", "--domain", "old", "--episodes", "1", "--out", "/dev/null")
    assert got.returncode == 2, got.stderr[-2000:]
    out = got.stdout + got.stderr
    assert "Traceback" not in out
    line = next(x for x in out.splitlines() if "old_contract.Old does not implement" in x)
    assert "make_env, policies" in line and "has_environment = False" in line
    assert "registered by 'old_contract'" in line


def test_a_python_user_gets_no_warning_about_the_projects_own_hooks() -> None:
    """``register_commands`` is the application's hook: a library user who never loads the CLI
    (so its spec is not added) gets no "not an agentworld hook" warning for the built-in
    plugins that implement it (there were three, one per built-in command plugin)."""
    code = ("from agentworld.core.plugins import get_domain; d = get_domain('terminal'); "
            "print(d.name)")
    got = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True,
                         text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == "terminal"
    assert "not an agentworld hook" not in got.stderr, got.stderr
    assert got.stderr.strip() == "", got.stderr
