"""A user repository with third-party dependencies (issue 45 item 2, its environment): the
declared requirements installed once, as wheels, in a venv on the host, bound read-only at
/opt/venv in every sandbox; its pytest suite (fixtures, ``pytest.raises``, ``attrs`` from PyPI)
run there by the real CLI; mutations caught; the expert's fix graded 1.0; the second collect
reuses the venv; a requirement with no wheel is one line before any file."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from agentworld.domains.swe.user_env import EnvError, EnvSpec, declared
from git_trees import commit_tree
from sandboxes import needs_sandbox

LIBRARY = '''"""Boxes and their areas."""
import attrs


@attrs.define
class Box:
    width: int
    height: int

    def area(self):
        return self.width * self.height

    def perimeter(self):
        return 2 * (self.width + self.height)

    def scale(self, k):
        if k <= 0:
            raise ValueError("scale factor must be positive")
        return Box(self.width * k, self.height * k)


def total_area(boxes):
    total = 0
    for box in boxes:
        total += box.area()
    return total


def largest(boxes):
    if not boxes:
        raise ValueError("no boxes")
    best = boxes[0]
    for box in boxes[1:]:
        if box.area() > best.area():
            best = box
    return best
'''
CONFTEST = '''import pytest

from shapes import Box


@pytest.fixture
def boxes():
    return [Box(1, 2), Box(3, 4), Box(2, 2)]
'''
TESTS = '''import attrs
import pytest

from shapes import Box, largest, total_area


@pytest.mark.parametrize("w, h, area", [(1, 2, 2), (3, 4, 12), (0, 5, 0)])
def test_area(w, h, area):
    assert Box(w, h).area() == area


def test_perimeter():
    assert Box(3, 4).perimeter() == 14


def test_scale():
    assert Box(1, 2).scale(3) == Box(3, 6)
    with pytest.raises(ValueError, match="positive"):
        Box(1, 2).scale(0)


def test_total_area(boxes):
    assert total_area(boxes) == 18


def test_largest(boxes):
    assert largest(boxes) == Box(3, 4)
    with pytest.raises(ValueError):
        largest([])


def test_boxes_are_attrs_classes():
    assert attrs.has(Box)
    assert attrs.asdict(Box(1, 2)) == {"width": 1, "height": 2}
'''
PYPROJECT = '''[project]
name = "shapes"
version = "0.1.0"
dependencies = [{deps}]

[project.optional-dependencies]
test = ["pytest>=7"]
'''
TEST_IDS = {*(f"tests/test_shapes.py::test_area[{p}]" for p in ("1-2-2", "3-4-12", "0-5-0")),
            *(f"tests/test_shapes.py::test_{n}" for n in
              ("perimeter", "scale", "total_area", "largest", "boxes_are_attrs_classes"))}


def make_repo(root: Path, deps: str = '"attrs>=21"', extra: dict[str, str] | None = None) -> Path:
    return commit_tree(root, {"pyproject.toml": PYPROJECT.format(deps=deps),
                              "src/shapes/__init__.py": LIBRARY, "tests/conftest.py": CONFTEST,
                              "tests/test_shapes.py": TESTS, **(extra or {})})


def registry_reachable() -> bool:
    host = urlsplit(os.environ.get("UV_INDEX_URL") or os.environ.get("UV_DEFAULT_INDEX")
                    or "https://pypi.org/simple").hostname or "pypi.org"
    try:
        socket.create_connection((host, 443), timeout=5).close()
    except OSError:
        return False
    return True


needs_registry = pytest.mark.skipif(not registry_reachable(),
                                    reason="the package registry is unreachable: the "
                                           "repository's declared wheels cannot be installed")


def collect(tmp_path: Path, cache: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).with_name("agentworld")), "collect", "--domain", "swe", *args],
        capture_output=True, text=True, timeout=500, cwd=tmp_path, check=False,
        env={**os.environ, "AGENTWORLD_CACHE": str(cache), **env})


@needs_sandbox
@needs_registry
def test_collect_with_the_repos_declared_dependencies(tmp_path):
    repo = make_repo(tmp_path / "shapes")
    cache, out = tmp_path / "cache", tmp_path / "eps.jsonl"
    run = collect(tmp_path, cache, "--set", f"repo={repo}", "--episodes", "4", "--out", str(out),
                  "--seed", "2")
    assert run.returncode == 0, run.stderr
    eps = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(eps) == 4 and {ep["metadata"]["policy"] for ep in eps} == {"scripted", "random"}
    for ep in eps:
        task = ep["task"]
        assert task["setup"]["mutation"]["file"] == "src/shapes/__init__.py"
        failing = task["check"]["fail_to_pass"]
        assert failing and set(failing) | set(task["check"]["pass_to_pass"]) == TEST_IDS
        assert failing[0] in task["instruction"]
        if ep["metadata"]["policy"] == "scripted":
            first = ep["steps"][0]["observation"]["text"]  # pytest -v in the sandbox
            assert f"{failing[0]} FAILED" in first and "/opt/venv/bin/python" in first, first
            assert ep["steps"][-1]["reward"] == 1.0, ep["steps"][-1]["observation"]["text"]
    envs = list((cache / "swe-envs").iterdir())
    assert len(envs) == 1
    built = json.loads((envs[0] / "env.json").read_text())
    assert built == {"requirements": ["attrs>=21", "pytest>=7"], "pytest": True}
    assert not (envs[0] / "venv" / "lib" / "python3.11" / "site-packages" / "shapes").exists()
    stamp = (envs[0] / "env.json").stat().st_mtime_ns, envs[0].stat().st_ino
    # built once: a second collect reuses it (with no uv to build one)
    again = collect(tmp_path, cache, "--set", f"repo={repo}", "--episodes", "2", "--out",
                    str(tmp_path / "again.jsonl"), "--seed", "3", UV="/nonexistent/uv",
                    PATH="/usr/bin:/bin")
    assert again.returncode == 0, again.stderr
    assert list((cache / "swe-envs").iterdir()) == envs
    assert ((envs[0] / "env.json").stat().st_mtime_ns, envs[0].stat().st_ino) == stamp


@needs_sandbox
@needs_registry
def test_a_requirement_with_no_wheel_is_one_line_before_any_file(tmp_path):
    """docopt 0.6.2 is published as an sdist only: wheels-only refuses it (its setup.py never
    runs on the host)."""
    repo = make_repo(tmp_path / "shapes", deps='"attrs>=21", "docopt==0.6.2"')
    cache, out = tmp_path / "cache", tmp_path / "eps.jsonl"
    run = collect(tmp_path, cache, "--set", f"repo={repo}", "--episodes", "2", "--out", str(out))
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "requirement 'docopt==0.6.2'" in lines[0], run.stderr
    assert "no usable wheels" in lines[0] and str(repo) in lines[0]
    assert not out.exists() and not Path(f"{out}.part").exists()
    assert not any((cache / "swe-envs").iterdir())  # no half-built environment kept


@needs_sandbox
@needs_registry
def test_the_agents_shell_has_the_env_and_grading_ignores_its_tricks(tmp_path, monkeypatch):
    """The agent's shell imports the dependencies and runs pytest; /opt/venv is read-only; a
    .pth in the user site, a conftest.py that passes every test and rewritten tests score 0,
    while the graded run still sees the mutation."""
    from agentworld.domains.swe.domain import UserSweDomain
    from agentworld.domains.swe.tools import render_call

    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "cache"))
    domain = UserSweDomain(make_repo(tmp_path / "shapes"))
    task = domain.tasks().sample(1, seed=1)[0]
    env = domain.make_env()
    assert "pytest -v's log" in domain.system_prompt(task)
    assert "/opt/venv" in domain.describe()["tests"]
    # a pytest plugin marking every test passed
    passing = ("import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport("
               "item, call):\n    outcome = yield\n    outcome.get_result().outcome = %s\n")
    tricks = [
        ("d=$(python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p \"$d\" && "
         f"printf '{passing}' '\"passed\"' > \"$d/awpass.py\" && "
         "echo 'import os; os.environ[\"PYTEST_ADDOPTS\"] = \"-p awpass\"' > \"$d/aw.pth\""),
        f"printf '{passing}' '\"passed\"' > conftest.py && cp conftest.py tests/conftest.py",
        "printf 'def test_ok():\\n    pass\\n' > tests/test_shapes.py",
    ]
    try:
        env.reset(options={"task": task})
        shell = env.step(render_call("bash", {"command": (
            "python3 -c 'import attrs, shapes; print(attrs.__name__, shapes.Box(2, 3).area())'"
            " && pytest -q -p no:cacheprovider tests 2>&1 | tail -1; touch /opt/venv/x")}))[0]
        assert "attrs 6" in shell and re.search(r"\d+ failed, \d+ passed", shell), shell
        assert "Read-only file system" in shell
        for command in tricks:
            env.step(render_call("bash", {"command": command}))
        shown = env.step(render_call("run_tests", {}))[0]
        assert "FAILED" not in shown  # the agent's own run is fooled
        _, reward, terminated, _, info = env.step(render_call("submit", {}))
        assert terminated and reward == 0.0
        assert info["tests"][task.check["fail_to_pass"][0]] is False
    finally:
        env.close()


@needs_sandbox
@needs_registry
def test_a_suite_whose_log_outgrows_the_agents_output_limit(tmp_path, monkeypatch):
    """1,500 tests write ~150 KiB of pytest -v log, over the agent's 64 KiB: the host's own
    runs (task sampling, grading) read it whole, so none is taken for failing."""
    from agentworld.domains.swe.env import default_limits
    from agentworld.domains.swe.user_repo import UserRepo
    from agentworld.domains.swe.user_tasks import UserTaskSampler

    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "cache"))
    many = ("import pytest\nfrom shapes import Box\n\n\n@pytest.mark.parametrize('w', "
            "range(1500))\ndef test_area_of_a_rather_long_named_box(w):\n"
            "    assert Box(w, 1).area() == w\n")
    repo = UserRepo.read(make_repo(tmp_path / "shapes", extra={"tests/test_many.py": many}))
    passing = UserTaskSampler(repo, default_limits()).passing()
    assert len(passing) == 1500 + len(TEST_IDS)
    assert "tests/test_many.py::test_area_of_a_rather_long_named_box[1499]" in passing


@needs_sandbox
@needs_registry
def test_a_unittest_suite_with_a_dependency_runs_with_the_envs_python(tmp_path, monkeypatch):
    """requirements.txt declares six; the unittest suite imports it: no pytest is added, the
    unittest runner runs under /opt/venv/bin/python (the bare python3 lacks six)."""
    from agentworld.domains.swe.env import default_limits
    from agentworld.domains.swe.user_repo import UserRepo
    from agentworld.domains.swe.user_tasks import UserTaskSampler

    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "textual"
    files = {"requirements.txt": "six>=1.16\n",
             "textual/__init__.py": "import six\n\n\ndef shout(text, times):\n"
                                    "    if times < 1:\n        return ''\n"
                                    "    return six.ensure_str(text).upper() + '!' * times\n",
             "tests/test_textual.py": "import unittest\n\nimport six\n\nfrom textual import "
                                      "shout\n\n\nclass T(unittest.TestCase):\n"
                                      "    def test_shout(self):\n"
                                      "        self.assertEqual(shout(b'hi', 2), 'HI!!')\n"
                                      "        self.assertEqual(shout(b'hi', 1), 'HI!')\n"
                                      "        self.assertEqual(shout(b'hi', 0), '')\n"
                                      "        self.assertTrue(six.PY3)\n"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b.invalid", "-C", str(root),
                    "commit", "-qm", "init"], check=True)
    repo = UserRepo.read(root)
    assert repo.env == EnvSpec(("six>=1.16",), pytest=False)
    assert "/opt/venv/bin/python -I -B -" in repo.test_command(grading=True)
    sampler = UserTaskSampler(repo, default_limits())
    assert sampler.passing() == {"test_textual.T.test_shout"}
    task = sampler.sample(1, seed=0)[0]
    assert task.check["fail_to_pass"] == ["test_textual.T.test_shout"]


def test_declared_requirements_are_read_from_the_repos_files():
    files = {
        "pyproject.toml": '[project]\nname = "Shapes"\ndependencies = ["attrs>=21"]\n'
                          '[project.optional-dependencies]\ntest = ["six"]\ndocs = ["sphinx"]\n'
                          '[dependency-groups]\ndev = [{include-group = "lint"}, "shapes[test]"]\n'
                          'lint = ["iniconfig"]\n',
        "requirements-dev.txt": "-r requirements/base.txt\n-e .\n--index-url https://x.invalid\n"
                                "packaging>=20 ; python_version >= '3'  # markers kept\n",
        "requirements/base.txt": "pluggy\n",
        "requirements-mypy.txt": "mypy\n", "requirements/docs.txt": "sphinx\n",
        "setup.cfg": "[options.extras_require]\ntest =\n    tomli\n",
        "tox.ini": "[testenv]\ndeps =\n    pygments\n    {[base]deps}\n"
                   "    -rrequirements/base.txt\n",
        "tests/test_a.py": "import unittest\n",
    }
    spec = declared(files, ["tests/test_a.py"])
    assert spec == EnvSpec(("attrs>=21", "iniconfig", 'packaging>=20; python_version >= "3"',
                            "pluggy", "pygments", "six", "tomli"), pytest=False)


@pytest.mark.parametrize("test_file, pytest_used", [
    ("import unittest\nclass A(unittest.TestCase):\n    def test_a(self): pass\n", False),
    ("from mod import f\n\ndef test_f():\n    assert f()\n", True),  # unittest collects none
    ("import unittest\nimport pytest\n", True),
])
def test_pytest_is_added_when_the_tests_use_it(test_file, pytest_used):
    spec = declared({"tests/test_a.py": test_file}, ["tests/test_a.py"])
    assert (spec == EnvSpec(("pytest",), True)) if pytest_used else spec is None


@pytest.mark.parametrize("requirements, says", [
    ("attrs >>= 2\n", "requirements.txt: invalid requirement 'attrs >>= 2'"),
    ("attrs @ https://example.invalid/attrs.tar.gz\n", "names a URL"),
])
def test_a_bad_declaration_is_refused(requirements, says):
    with pytest.raises(EnvError, match=re.escape(says)):
        declared({"requirements.txt": requirements}, [])


@needs_sandbox
def test_a_read_only_bind_under_opt():
    """The terminal's ro_binds: the host folder is seen read-only; only /opt/ paths."""
    from agentworld.domains.terminal.env import TerminalEnv

    # a folder a root caller's sandbox uid can reach (pytest's tmp_path is private)
    shared = Path(tempfile.mkdtemp(prefix="aw-bind-"))
    shared.chmod(0o755)
    (shared / "data.txt").write_text("from the host\n")
    (shared / "data.txt").chmod(0o644)
    env = TerminalEnv(ro_binds=((str(shared), "/opt/tool"),))
    try:
        env.reset()
        out = env.run("cat /opt/tool/data.txt; echo x > /opt/tool/data.txt; echo rc=$?").output
        assert "from the host" in out and "Read-only file system" in out and "rc=1" in out
        assert (shared / "data.txt").read_text() == "from the host\n"
    finally:
        env.close()
        shutil.rmtree(shared)
    bad = TerminalEnv(ro_binds=((str(shared), "/usr/local"),))
    with pytest.raises(ValueError, match="under /opt/"):
        bad.reset()
    bad.close()


def test_pytest_logs_with_spaces_in_parameter_ids():
    """humanize's suite names tests such as test_intword[[1000000, '%0.3f']-1.000 million]: a
    node id ends at the last ']' before the outcome word (632 of its 908 were unread)."""
    from agentworld.domains.swe import testlog

    log = ("tests/test_n.py::test_metric[[0]-0.00] PASSED\n"
           "tests/test_n.py::test_intword[[1000000, '%0.3f']-1.000 million] FAILED\n"
           "tests/test_n.py::T::test_b PASSED                                [ 50%]\n"
           "src/h/number.py::h.number.metric FAILED\n"
           "=========================== short test summary info ============================\n"
           "FAILED tests/test_n.py::test_intword[[1000000, '%0.3f']-1.000 million] - "
           "AssertionError: assert 'x - y' == 'z'\n"
           "FAILED src/h/number.py::h.number.metric\n")
    wide = "tests/test_n.py::test_intword[[1000000, '%0.3f']-1.000 million]"
    assert testlog.outcomes(log) == {"tests/test_n.py::test_metric[[0]-0.00]": True, wide: False,
                                     "tests/test_n.py::T::test_b": True,
                                     "src/h/number.py::h.number.metric": False}
    assert testlog.errors(log) == {wide: "AssertionError: assert 'x - y' == 'z'",
                                   "src/h/number.py::h.number.metric": ""}
