"""Grading the agent cannot touch (issue 43, item 3): ``submit`` after a ``.pth`` file in the
agent's user site, a ``python3`` shell function, or tests edited and committed scores 0, while
a real fix scores 1.0; the graded run sees only the episode's library files."""

from __future__ import annotations

import secrets

import pytest
from agentworld.domains.swe.env import SweEnv
from agentworld.domains.swe.grading import graded_tree, library_diff, library_paths, read_library
from agentworld.domains.swe.project import project_files
from agentworld.domains.swe.tasks import SweTaskSampler
from agentworld.domains.swe.tools import render_call
from sandboxes import needs_sandbox

pytestmark = needs_sandbox

# Marks every test as passed without running it.
PASS_ALL = ("import unittest; unittest.TestCase.run = lambda self, result=None: "
            "(result.startTest(self), result.addSuccess(self), result.stopTest(self))")
ATTACKS = {
    "pth": ("d=$(python3 -c 'import site; print(site.getusersitepackages())') && "
            f"mkdir -p \"$d\" && echo '{PASS_ALL}' > \"$d/aw.pth\""),
    "function": ("python3() { command python3 \"$@\" | "
                 "sed -e 's/ \\.\\.\\. FAIL$/ ... ok/' -e 's/ \\.\\.\\. ERROR$/ ... ok/'; }"),
    "committed tests": (f"for f in tests/test_*.py; do {{ echo '{PASS_ALL}'; cat \"$f\"; }} > t "
                        "&& mv t \"$f\"; done && "
                        "git -c user.name=a -c user.email=a@b.invalid commit -qam 'tests'"),
}


@pytest.fixture(scope="module")
def task():
    return SweTaskSampler(["delete_line"]).sample(1, seed=2)[0]


def _fix(task) -> str:
    """A bash command writing the clean version of the task's mutated file."""
    path = task.setup["mutation"]["file"]
    end = f"AW_{secrets.token_hex(4)}"
    text = project_files(task.setup["project"])[path]
    return f"cat > {path} <<'{end}'\n{text}{end}"


def _submit(task, commands: list[str], shown: bool = False) -> tuple[float, dict, SweEnv]:
    """Reset, run ``commands`` with the ``bash`` tool, then (``shown``) check that the agent's
    own ``run_tests`` shows the task's failing test passing, then submit."""
    env = SweEnv()
    env.reset(options={"task": task})
    for command in commands:
        _, reward, terminated, _, _ = env.step(render_call("bash", {"command": command}))
        assert reward == 0.0 and not terminated
    if shown:
        obs, reward, terminated, _, _ = env.step(render_call("run_tests", {}))
        assert f"{task.check['fail_to_pass'][0]} ... ok" in str(obs), str(obs)[-2000:]
        assert reward == 0.0 and not terminated  # graded apart: the test still fails there
    _, reward, terminated, _, info = env.step(render_call("submit", {}))
    assert terminated
    return reward, info, env


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_an_attack_on_grading_scores_nothing(task, attack):
    reward, info, env = _submit(task, [ATTACKS[attack]], shown=True)
    try:
        assert reward == 0.0, f"{attack}: rewarded with no fix"
        assert info["tests"][task.check["fail_to_pass"][0]] is False
        pristine = env._pristine
        library = read_library(env.terminal.root, library_paths(pristine))
        assert library_diff(pristine, library) == ""
    finally:
        env.close()


@pytest.mark.parametrize("attack", ["none", *ATTACKS])
def test_a_real_fix_scores_one(task, attack):
    commands = [_fix(task)] if attack == "none" else [ATTACKS[attack], _fix(task)]
    reward, info, env = _submit(task, commands)
    try:
        assert reward == 1.0 and all(info["tests"].values()), info
        pristine = env._pristine
        library = read_library(env.terminal.root, library_paths(pristine))
        diff = library_diff(pristine, library)
        assert diff.startswith(f"--- a/{task.setup['mutation']['file']}\n") and "\n+" in diff
        tree = graded_tree(pristine, library)
        assert all(tree[p] == pristine[p] for p in pristine if p.startswith("tests/"))
    finally:
        env.close()


def test_a_library_file_that_links_elsewhere_is_graded_as_deleted(task):
    """A library file replaced by a link to a host file is not followed by the host."""
    path = task.setup["mutation"]["file"]
    reward, info, env = _submit(task, [f"rm {path} && ln -s /etc/hostname {path}"])
    try:
        assert reward == 0.0
        library = read_library(env.terminal.root, [path])
        assert library == {path: None}
        assert library_diff(env._pristine, library).startswith(f"--- a/{path}\n+++ /dev/null\n")
    finally:
        env.close()
