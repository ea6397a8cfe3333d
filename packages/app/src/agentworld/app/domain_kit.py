"""The domain kit: ``agentworld new-domain NAME`` writes a working domain package to start from.

The package (``agentworld-domain-NAME``, module ``agentworld_NAME``) holds a counter
environment, its task sampler, a scripted policy and the :class:`~agentworld.core.domain_base.DomainBase`
subclass tying them together (one ~60-line module), the ``agentworld`` entry point that
registers it, and a test that checks the contract and collects two episodes. Installed
(``uv pip install -e DIR``), ``agentworld collect --domain NAME`` runs it as it is.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

#: A domain name: lower-case letters, digits and ``-``, starting with a letter (it names the
#: entry point, the distribution ``agentworld-domain-NAME`` and the module ``agentworld_NAME``).
NAME = re.compile(r"[a-z][a-z0-9-]{0,39}")

PYPROJECT = """[project]
name = "agentworld-domain-{name}"
version = "0.1.0"
description = "The {name} domain for agentworld."
requires-python = ">=3.11"
dependencies = ["agentworld-core"]

[project.entry-points.agentworld]
{name} = "{module}.domain"

[build-system]
requires = ["hatchling>=1.25"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["src/{module}"]
"""

DOMAIN = '''"""The {name} domain: the agent moves a counter to a target, then says ``done``.

Actions are ``up``, ``down`` and ``done``; the observation is ``count: N``. ``done`` ends the
episode with reward 1.0 when the count equals the task's target, else 0.0. Replace the
environment, the tasks and the policy with your own (docs/plugins.md)."""

from __future__ import annotations

import random
from typing import Any

from agentworld.core.domain_base import DomainBase, PolicyBase
from agentworld.core.hookspecs import hookimpl
from agentworld.core.types import Action, Observation, Task


class CounterEnv:
    """reset(*, seed, options) -> (observation, info), the task in options["task"];
    step(action) -> (observation, reward, terminated, truncated, info)."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        task = (options or {{}}).get("task")
        self.target, self.count = (task.setup["target"] if task else 0), 0
        return Observation(text="count: 0"), {{}}

    def step(self, action: Action):
        if action.text == "done":
            reward = float(self.count == self.target)
            return Observation(text=f"count: {{self.count}}"), reward, True, False, {{}}
        self.count += {{"up": 1, "down": -1}}.get(action.text, 0)
        return Observation(text=f"count: {{self.count}}"), 0.0, False, False, {{}}

    def close(self) -> None: ...


class Tasks:
    kinds = ("count",)

    def sample(self, n: int, *, seed: int) -> list[Task]:
        rng = random.Random(seed)
        targets = [rng.randint(-3, 3) for _ in range(n)]
        return [Task(id=f"{name}-{{seed}}-{{i}}", domain="{name}", kind="count",
                     instruction=f"make the count {{t}}, then say done", setup={{"target": t}})
                for i, t in enumerate(targets)]


class Scripted(PolicyBase):
    """Steps towards the target, then says ``done``."""

    name = "scripted"

    def act(self, task: Task | None, history: list[Any]) -> Action | None:
        count = int(history[-1].text.split(": ")[1])  # history: observation, action, ...
        target = task.setup["target"] if task else 0
        return Action(text="done" if count == target else "up" if count < target else "down")


class {cls}Domain(DomainBase):
    name = "{name}"
    version = "0.1.0"
    actions = ["up", "down", "done"]

    def system_prompt(self, task: Task | None) -> str:
        return "You simulate a counter: up adds 1, down subtracts 1; reply count: N."

    def make_env(self, **kwargs: Any) -> CounterEnv:
        return CounterEnv()

    def tasks(self) -> Tasks:
        return Tasks()

    def policies(self) -> dict[str, PolicyBase]:
        return {{"scripted": Scripted()}}


@hookimpl
def register_domains(register):
    register("{name}", {cls}Domain)
'''

TEST = '''"""The {name} domain meets agentworld's contract and its scripted policy reaches the target."""

from agentworld.core.collect import collect
from agentworld.core.plugins import check_contract

from {module}.domain import {cls}Domain


def test_contract_and_two_scripted_episodes():
    domain = {cls}Domain()
    check_contract("domain", "{name}", domain)
    episodes = collect(domain, 2, policies={{"scripted": 1.0}}, seed=0, workers=1)
    for episode in episodes:
        assert episode.steps[-1].action.text == "done" and episode.steps[-1].reward == 1.0
        assert episode.steps[-1].observation.text == f"count: {{episode.task.setup['target']}}"
'''

README = """# agentworld-domain-{name}

A domain for agentworld, made by `agentworld new-domain {name}`: `src/{module}/domain.py` is
the whole domain. Install it into agentworld's environment (`uv pip install -e .`; a later `uv sync` of
agentworld removes it: install it again, or add it to that project's dependencies), then:

    agentworld domains
    agentworld collect --domain {name} --episodes 2 --out episodes.jsonl
    pytest tests
"""


def package_files(name: str) -> dict[str, str]:
    """``{relative path: text}`` of the domain package for ``name``.

    Raises:
        ValueError: ``name`` is not a valid domain name (:data:`NAME`).
    """
    if not NAME.fullmatch(name):
        raise ValueError(
            f"domain name {name!r} is not valid: use lower-case letters, digits and '-', "
            "starting with a letter (at most 40 characters), e.g. 'counter'"
        )
    module = "agentworld_" + name.replace("-", "_")
    cls = "".join(part.capitalize() for part in name.split("-"))
    fields = {"name": name, "module": module, "cls": cls}
    return {
        "pyproject.toml": PYPROJECT.format(**fields),
        "README.md": README.format(**fields),
        f"src/{module}/__init__.py": f'"""The {name} domain for agentworld."""\n',
        f"src/{module}/domain.py": DOMAIN.format(**fields),
        f"tests/test_{module}.py": TEST.format(**fields),
    }


def write_package(name: str, out: Path) -> Path:
    """Write the domain package for ``name`` to ``out/agentworld-domain-NAME`` and return that
    folder. The files are written to a temporary folder beside it, which is then renamed, so
    the folder appears whole or not at all.

    Raises:
        ValueError: ``name`` is not valid, or the folder already exists.
        OSError: ``out`` cannot be written.
    """
    files = package_files(name)
    target = out / f"agentworld-domain-{name}"
    if target.exists():
        raise ValueError(f"{target} already exists; choose another --out or remove it")
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=out))
    try:
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        os.chmod(staging, 0o755)
        staging.rename(target)
    except BaseException:
        for path in sorted(staging.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        staging.rmdir()
        raise
    return target
