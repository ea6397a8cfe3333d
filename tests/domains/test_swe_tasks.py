"""The swe domain without a sandbox: mutation operators, the seeded task sampler, the test-log
reader, the scorer and the domain's hooks."""

from __future__ import annotations

import pytest
from agentworld.core import plugins
from agentworld.core.types import Action, Episode, Observation, Step
from agentworld.domains.swe import testlog
from agentworld.domains.swe.domain import SweDomain
from agentworld.domains.swe.mutations import OPERATORS, Mutation, apply, candidates, fix_edit
from agentworld.domains.swe.project import get_project, project_files, suite_files
from agentworld.domains.swe.scorer import score
from agentworld.domains.swe.tasks import KINDS, SweTaskSampler, repo_files, run_on_host
from agentworld.domains.swe.tools import render_call


def test_project_suite_passes_on_the_host():
    log = run_on_host(project_files())
    outcomes = testlog.outcomes(log)
    assert len(outcomes) == 32 and all(outcomes.values())
    assert testlog.summary(log) == "Ran 32 tests\n\nOK"
    assert suite_files() == ["tests/test_dates.py", "tests/test_stats.py", "tests/test_text.py"]


def test_the_second_project_suite_passes_on_the_host():
    log = run_on_host(project_files("ledger"))
    assert testlog.summary(log) == "Ran 24 tests\n\nOK"
    assert suite_files("ledger") == ["tests/test_accounts.py", "tests/test_money.py",
                                     "tests/test_report.py"]
    assert repo_files(None, "ledger")["README.md"].startswith("# ledger\n")
    with pytest.raises(ValueError, match="unknown swe project 'nope'; valid: textkit, ledger"):
        project_files("nope")


@pytest.mark.parametrize("project", ["textkit", "ledger"])
def test_every_operator_has_candidates_and_fix_edit_reverts_each(project):
    files = project_files(project)
    for kind in OPERATORS:
        found = [m for f in get_project(project).modules for m in candidates(f, files[f], kind)]
        assert len(found) >= (8 if project == "textkit" else 4), kind
        for m in found:
            buggy = apply(files[m.file], m)
            assert buggy != files[m.file]
            old, new = fix_edit(buggy, m)
            assert buggy.count(old) == 1 and buggy.replace(old, new) == files[m.file]


def test_a_mutation_makes_tests_fail_and_reverting_it_makes_them_pass():
    m = Mutation("flip_comparison", "textkit/dates.py", 15,
                 "    if month == 2 and is_leap_year(year):", "    if month != 2 and is_leap_year(year):")
    assert m in candidates(m.file, project_files()[m.file], "flip_comparison")
    log = run_on_host(repo_files(m))
    failing = sorted(t for t, ok in testlog.outcomes(log).items() if not ok)
    assert failing == ["tests.test_dates.IsoTests.test_parse_iso",
                       "tests.test_dates.LeapTests.test_days_in_month",
                       "tests.test_dates.OrdinalTests.test_add_days",
                       "tests.test_dates.OrdinalTests.test_day_of_year"]
    assert testlog.errors(log) == {
        "tests.test_dates.IsoTests.test_parse_iso": "ValueError: day out of range for month",
        "tests.test_dates.LeapTests.test_days_in_month": "AssertionError: 28 != 29",
        "tests.test_dates.OrdinalTests.test_add_days":
            "AssertionError: Tuples differ: (2024, 3, 1) != (2024, 2, 29)",
        "tests.test_dates.OrdinalTests.test_day_of_year": "AssertionError: 58 != 61"}
    assert testlog.summary(log) == "Ran 32 tests\n\nFAILED (failures=3, errors=1)"
    buggy = repo_files(m)
    old, new = fix_edit(buggy[m.file], m)
    buggy[m.file] = buggy[m.file].replace(old, new)
    assert all(testlog.outcomes(run_on_host(buggy)).values())


def test_sampler_is_seeded_and_covers_every_kind_in_both_projects():
    sampler = SweTaskSampler()
    tasks = sampler.sample(2 * len(KINDS), seed=5)
    assert [t.model_dump() for t in tasks] == [t.model_dump() for t in sampler.sample(10, seed=5)]
    assert {(t.kind, t.setup["project"]) for t in tasks} == {
        (k, p) for k in KINDS for p in ("textkit", "ledger")}
    suite = {"textkit": 32, "ledger": 24}
    for t in tasks:
        project = t.setup["project"]
        assert t.check["fail_to_pass"] and len(t.check["fail_to_pass"]) + len(
            t.check["pass_to_pass"]) == suite[project]
        assert t.setup["mutation"]["kind"] == t.kind
        assert t.setup["mutation"]["file"].startswith(f"{project}/")
        assert t.check["fail_to_pass"][0] in t.instruction and "/home/agent" in t.instruction
        assert t.instruction.startswith(f"Bug in {project}: ")
    with pytest.raises(ValueError, match="unknown task kinds"):
        SweTaskSampler(["typo"])
    with pytest.raises(ValueError, match="unknown swe projects .*valid: textkit, ledger"):
        SweTaskSampler(projects=["nope"])
    with pytest.raises(ValueError, match="n must be >= 0"):
        sampler.sample(-1, seed=0)


def test_scorer_on_test_logs_diffs_and_text():
    log = "a.T.test_x ... ok\na.T.test_y ... FAIL\n\nRan 2 tests\n\nFAILED (failures=1)"
    assert score(log, Observation(text=log)) == 1.0
    assert score("a.T.test_x ... ok\na.T.test_y ... ok", Observation(text=log)) == 0.5
    diff = "--- f\n+++ f\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d"
    assert score("--- f\n+++ f\n@@ -1,3 +1,3 @@\n a\n-b\n+x\n d", Observation(text=diff)) == \
        pytest.approx((1 + 0.5) / 2)
    assert score("x\ny", Observation(text="**Environment Observation:**\nx\nz")) == 0.5


def test_domain_hooks():
    domain = plugins.get_domain("swe")
    assert isinstance(domain, SweDomain) and plugins.owner("domain", "swe") == "swe"
    assert domain.action_type(render_call("bash", {"command": "grep -n x f"})) == "grep"
    assert domain.action_type(render_call("str_replace_editor", {"command": "view", "path": "/"})) \
        == "str_replace_editor"
    assert domain.action_type(Action(text="not json")) == "invalid"
    assert domain.command_families(render_call("str_replace_editor", {
        "command": "insert", "path": "/a"})) == {"str_replace_editor", "str_replace_editor:insert"}
    prompt = domain.system_prompt(None)
    assert '"name": "str_replace_editor"' in prompt and "run_tests" in prompt
    path = "/home/agent/textkit/stats.py"
    calls = [("str_replace_editor", {"command": "view", "path": path}, "Here's ..."),
             ("str_replace_editor", {"command": "str_replace", "path": path, "old_str": "a",
                                     "new_str": "b"}, "The file ... edited"),
             ("str_replace_editor", {"command": "view", "path": path}, "Here's ..."),
             ("str_replace_editor", {"command": "view", "path": "/home/agent/x"}, "Here's"),
             ("run_tests", {}, "x ... ok")]
    steps = [Step(action=render_call(n, a), observation=Observation(text=o)) for n, a, o in calls]
    episode = Episode(id="e", domain="swe", system_prompt="", steps=steps,
                      initial_observation=Observation(text=""))
    assert domain.consistency_turns(episode) == [2, 4]
    assert domain.verify("Submitted. ...\nTests: 32/32 passed; the issue is resolved.", None) == (1.0, True)
    assert domain.verify("x", None) is None
