"""``agentworld collect --domain swe --set repo=PATH [--set test_cmd=...]``: the user's own
repository (issue 45 item 2). A small real git repository made here (a package and its
unittest suite, no ``__init__.py`` in ``tests/``); the real CLI in a subprocess; every test
run in the sandbox; mutations of the repository's own source kept only when a test fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from git_trees import commit_tree
from sandboxes import needs_sandbox

pytestmark = needs_sandbox

LIBRARY = '''"""Tiny arithmetic helpers."""


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def mean(values):
    total = 0
    for v in values:
        total += v
    return total / len(values)


def window_sums(values, size):
    out = []
    for i in range(len(values) - size + 1):
        out.append(sum(values[i:i + size]))
    return out


def is_leap(year):
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
'''
TESTS = '''import unittest

from minicalc import clamp, is_leap, mean, window_sums


class CalcTests(unittest.TestCase):
    def test_clamp(self):
        self.assertEqual(clamp(5, 0, 3), 3)
        self.assertEqual(clamp(-1, 0, 3), 0)
        self.assertEqual(clamp(3, 0, 3), 3)

    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_window_sums(self):
        self.assertEqual(window_sums([1, 2, 3, 4], 2), [3, 5, 7])

    def test_leap(self):
        self.assertTrue(is_leap(2000))
        self.assertFalse(is_leap(1900))
        self.assertTrue(is_leap(2024))
        self.assertFalse(is_leap(2023))
'''


def make_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    return commit_tree(root, files if files is not None else {
        "minicalc/__init__.py": LIBRARY, "tests/test_minicalc.py": TESTS, "README.md": "# minicalc\n"})


def collect(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).with_name("agentworld")), "collect", "--domain", "swe", *args],
        capture_output=True, text=True, timeout=150, cwd=tmp_path)


@pytest.mark.parametrize("test_cmd", [None, "python3 -m unittest discover -s tests -v 2>&1"])
def test_collect_fixes_mutations_of_the_users_repo(tmp_path, test_cmd):
    repo = make_repo(tmp_path / "minicalc")
    out = tmp_path / "eps.jsonl"
    extra = ["--set", f"test_cmd={test_cmd}"] if test_cmd else []
    run = collect(tmp_path, "--set", f"repo={repo}", *extra, "--episodes", "4", "--out", str(out),
                  "--seed", "2")
    assert run.returncode == 0, run.stderr
    eps = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(eps) == 4
    tests = {f"test_minicalc.CalcTests.test_{n}" for n in ("clamp", "mean", "window_sums", "leap")}
    for ep in eps:
        task = ep["task"]
        mutation = task["setup"]["mutation"]
        assert task["setup"]["repo"] == "minicalc" and mutation["file"] == "minicalc/__init__.py"
        assert mutation["original"] in LIBRARY.split("\n")
        # kept only because a test of the repository fails with it
        assert task["check"]["fail_to_pass"] and set(task["check"]["fail_to_pass"]) <= tests
        assert set(task["check"]["fail_to_pass"]) | set(task["check"]["pass_to_pass"]) == tests
        assert task["check"]["fail_to_pass"][0] in task["instruction"]
        if ep["metadata"]["policy"] == "scripted":
            assert ep["steps"][-1]["reward"] == 1.0, ep["steps"][-1]["observation"]["text"]
            first = ep["steps"][0]["observation"]["text"]  # run_tests in the sandbox
            assert any(f"{t}) ... FAIL" in first or f"{t} ... FAIL" in first
                       or f"{t}) ... ERROR" in first or f"{t} ... ERROR" in first
                       for t in task["check"]["fail_to_pass"]), first
    assert {ep["metadata"]["policy"] for ep in eps} == {"scripted", "random"}


def test_the_graded_run_ignores_the_agents_test_edits(tmp_path):
    """Grading reads only the library modules: tests rewritten to pass score nothing."""
    from agentworld.domains.swe.domain import SweDomain
    from agentworld.domains.swe.tools import render_call

    domain = SweDomain().for_environment({"repo": str(make_repo(tmp_path / "minicalc"))})
    task = domain.tasks().sample(1, seed=4)[0]
    env = domain.make_env()
    try:
        env.reset(options={"task": task})
        cheat = "printf 'import unittest\\n' > tests/test_minicalc.py"
        env.step(render_call("bash", {"command": cheat}))
        _, reward, terminated, _, _ = env.step(render_call("submit", {}))
        assert terminated and reward == 0.0
        # the tasks of another repository version are refused
        other = task.model_copy(update={"setup": {**task.setup, "digest": "0" * 16}})
        with pytest.raises(ValueError, match="not a task of the repository"):
            env.reset(options={"task": other})
    finally:
        env.close()


# tests that fail on the clean repository (a repository whose tests use pytest or declare
# dependencies gets its environment: tests/domains/test_swe_user_env.py)
ALL_FAILING = {"minicalc/__init__.py": LIBRARY,
               "tests/test_plain.py": "import unittest\n\nfrom minicalc import mean\n\n\n"
                                      "class T(unittest.TestCase):\n    def test_mean(self):\n"
                                      "        self.assertEqual(mean([1, 3]), 3)\n"}


@pytest.mark.parametrize("make, args, says", [
    (lambda d: d.mkdir(), [], "is not a git repository"),
    (lambda d: None, [], "is not a folder"),
    (lambda d: make_repo(d, {"minicalc/__init__.py": LIBRARY}), [], "has no tests"),
    (lambda d: make_repo(d, {"tests/test_x.py": TESTS}), [], "no tracked Python module"),
    (lambda d: make_repo(d, ALL_FAILING), [], "no test passes in the sandbox"),
    (lambda d: d.mkdir(), ["--set", "test_cmd="], "test_cmd"),
])
def test_an_unusable_repo_is_one_line_before_any_file(tmp_path, make, args, says):
    repo = tmp_path / "minicalc"
    make(repo)
    out = tmp_path / "eps.jsonl"
    run = collect(tmp_path, "--set", f"repo={repo}", *args, "--episodes", "2", "--out", str(out))
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], run.stderr
    assert not out.exists() and not Path(f"{out}.part").exists()


def test_a_real_pypi_package_with_its_own_tests(tmp_path):
    """websocket-client (pure Python, stdlib only; in this workspace's environment) with the
    unittest suite it ships: its 200-odd tests run in the sandbox, mutations of its own
    modules that they catch, the expert resolving them."""
    import shutil

    import websocket

    repo = tmp_path / "websocket-client"
    repo.mkdir()
    shutil.copytree(Path(websocket.__file__).parent, repo / "websocket",
                    ignore=shutil.ignore_patterns("__pycache__"))
    make_repo(repo, {})
    out = tmp_path / "eps.jsonl"
    run = collect(tmp_path, "--set", f"repo={repo}", "--episodes", "2", "--policy", "scripted=1",
                  "--out", str(out), "--seed", "1")
    assert run.returncode == 0, run.stderr
    eps = [json.loads(line) for line in out.read_text().splitlines()]
    for ep in eps:
        check = ep["task"]["check"]
        assert ep["task"]["setup"]["mutation"]["file"].startswith("websocket/_")
        assert len(check["fail_to_pass"]) + len(check["pass_to_pass"]) > 150
        assert all(t.startswith("websocket.tests.test_") for t in check["fail_to_pass"])
        assert ep["steps"][-1]["reward"] == 1.0


SPIN = {"spin/__init__.py": "def spin(n):\n    while n:\n        n = n - 1\n    return n\n",
        "tests/test_spin.py": "import unittest\n\nfrom spin import spin\n\n\n"
                              "class T(unittest.TestCase):\n    def test_spin(self):\n"
                              "        self.assertEqual(spin(3), 0)\n"}


def test_a_mutation_that_hangs_the_suite_costs_the_budget_not_the_limit(tmp_path, monkeypatch):
    """Both off-by-one mutations of ``n - 1`` loop for ever. Their runs, in task sampling and
    in grading, get a budget from the clean run's time (here 2 x, at least 2 s), recorded in
    the task, not the clean run's 300 s limit: cachetools took 36 min for 40 episodes."""
    import random
    import time

    from agentworld.domains.swe import user_repo
    from agentworld.domains.swe.env import SweEnv
    from agentworld.domains.swe.tools import render_call
    from agentworld.domains.swe.user_tasks import UserTaskSampler
    from agentworld.domains.terminal.limits import Limits

    monkeypatch.setattr(user_repo, "SUITE_FACTOR", 2.0)
    monkeypatch.setattr(user_repo, "SUITE_MIN_S", 2.0)
    repo = user_repo.UserRepo.read(make_repo(tmp_path / "spin", SPIN))
    sampler = UserTaskSampler(repo, Limits())
    started = time.monotonic()
    task = sampler.task("off_by_one", random.Random(0), "t")
    assert task is not None and task.check == {"fail_to_pass": ["test_spin.T.test_spin"],
                                               "pass_to_pass": []}
    assert task.setup["suite_timeout_s"] == sampler.budget_s and 2.0 <= sampler.budget_s < 60
    assert time.monotonic() - started < 2 * sampler.budget_s + 60  # not 300 s

    env = SweEnv(repo=repo.root)
    try:
        env.reset(options={"task": task})
        started = time.monotonic()
        _, reward, terminated, _, _ = env.step(render_call("submit", {}))
        assert terminated and reward == 0.0
        assert time.monotonic() - started < sampler.budget_s + 60
        for bad in (0, 301, "30", True):
            wrong = task.model_copy(update={"setup": {**task.setup, "suite_timeout_s": bad}})
            with pytest.raises(ValueError, match=r"suite_timeout_s.*\(0, 300\]"):
                env.reset(options={"task": wrong})
    finally:
        env.close()


def test_a_generated_ignored_module_of_the_package_is_in_the_episode(tmp_path):
    """setuptools-scm writes ``PKG/_version.py`` and git ignores it; the package imports it.
    It is copied into the episode (not mutated); other ignored files are not."""
    from agentworld.domains.swe.user_repo import UserRepo

    library = "from minicalc._version import version\n" + LIBRARY
    repo = make_repo(tmp_path / "minicalc", {
        "minicalc/__init__.py": library, "tests/test_minicalc.py": TESTS,
        ".gitignore": "minicalc/_version.py\nscratch.py\nbuild/\n"})
    (repo / "minicalc" / "_version.py").write_text("version = '1.0'\n")
    (repo / "scratch.py").write_text("print('not part of the project')\n")
    (repo / "build").mkdir()
    (repo / "build" / "lib.py").write_text("x = 1\n")
    read = UserRepo.read(repo)
    assert "minicalc/_version.py" in read.files and "minicalc/_version.py" not in read.modules
    assert "scratch.py" not in read.files and "build/lib.py" not in read.files
    from agentworld.domains.swe.user_tasks import UserTaskSampler
    from agentworld.domains.terminal.limits import Limits

    # was: no test passes in the sandbox (the package's import of _version fails)
    assert len(UserTaskSampler(read, Limits()).passing()) == 4
