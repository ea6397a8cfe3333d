"""``agentworld new-domain NAME`` (issue 44 item 4): the package it writes is a working domain.
It is installed for real (its ``src`` on ``PYTHONPATH`` and a ``*.dist-info`` with its entry
point, read by :mod:`importlib.metadata`), then its own test runs and ``agentworld collect``
collects two episodes from it, in fresh interpreters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agentworld.app.domain_kit import package_files, write_package


def cli(*args: str, path: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": path}
    command = [sys.executable, "-c", "from agentworld.app.cli import main; main()", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``(package folder, PYTHONPATH)`` of ``agentworld new-domain tally``, installed."""
    out = tmp_path_factory.mktemp("kit")
    got = cli("new-domain", "tally", "--out", str(out))
    assert got.returncode == 0, got.stderr[-2000:]
    package = out / "agentworld-domain-tally"
    assert f"wrote {package}" in got.stdout
    entry = tomllib.loads((package / "pyproject.toml").read_text())["project"]["entry-points"]
    site = out / "site"
    info = site / "agentworld_domain_tally-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: agentworld-domain-tally\n"
                                   "Version: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[agentworld]\ntally = {entry['agentworld']['tally']}\n")
    return package, os.pathsep.join([str(site), str(package / "src")])


def test_the_domain_is_one_short_module() -> None:
    files = package_files("tally")
    assert set(files) == {"pyproject.toml", "README.md", "src/agentworld_tally/__init__.py",
                          "src/agentworld_tally/domain.py", "tests/test_agentworld_tally.py"}
    assert len(files["src/agentworld_tally/domain.py"].splitlines()) <= 80


def test_its_own_test_passes(installed: tuple[Path, str]) -> None:
    package, path = installed
    got = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests"], cwd=package, env={**os.environ, "PYTHONPATH": path},
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stdout[-3000:] + got.stderr[-2000:]
    assert "1 passed" in got.stdout


def test_collect_runs_it_from_its_entry_point(installed: tuple[Path, str], tmp_path: Path) -> None:
    _, path = installed
    out = tmp_path / "episodes.jsonl"
    got = cli("collect", "--domain", "tally", "--episodes", "2", "--out", str(out), path=path)
    assert got.returncode == 0, got.stderr[-3000:]
    episodes = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["domain"] for e in episodes] == ["tally", "tally"]
    for e in episodes:  # the scripted policy reaches each task's target, then says done
        last = e["steps"][-1]
        assert last["action"]["text"] == "done" and last["reward"] == 1.0
        assert last["observation"]["text"] == f"count: {e['task']['setup']['target']}"


def test_bad_names_and_existing_folders_are_one_line(tmp_path: Path) -> None:
    for args, says in ((["Bad_Name"], "domain name 'Bad_Name' is not valid"),
                       (["terminal"], "a domain named 'terminal' is already installed")):
        got = cli("new-domain", *args, "--out", str(tmp_path))
        assert got.returncode == 2 and got.stderr.strip().startswith(f"error: {says}"), got.stderr
        assert len(got.stderr.strip().splitlines()) == 1
    write_package("tally", tmp_path)
    with pytest.raises(ValueError, match="already exists"):
        write_package("tally", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agentworld-domain-tally"]
