"""Bug-fixing tasks in the user's own repository (:mod:`agentworld.domains.swe.user_repo`).

As for the built-in projects (:mod:`agentworld.domains.swe.tasks`), a task is the repository
with one :mod:`~agentworld.domains.swe.mutations` mutation of a library module, kept only when
a test that passes on the clean repository fails with it. Every run of the user's tests is a
fresh sandbox (:func:`~agentworld.domains.swe.grading.run_suite`: the user's code never runs
on the host), the clean run once per sampler, each candidate's run once (cached).

``Task.setup`` = ``{"repo": NAME, "digest": files' hash, "mutation": Mutation.to_dict(),
"suite_timeout_s": seconds}`` (the budget of a graded run, :func:`~agentworld.domains.swe.
user_repo.suite_budget` of the clean run's time: a mutation that hangs the suite costs that);
``Task.check`` = ``{"fail_to_pass": [ids], "pass_to_pass": [ids]}``; ``Task.kind`` is the
mutation operator.
"""

from __future__ import annotations

import random
import time

from agentworld.core.types import Task
from agentworld.domains.swe import testlog
from agentworld.domains.swe.grading import run_suite
from agentworld.domains.swe.mutations import OPERATORS, Mutation, apply, candidates
from agentworld.domains.swe.project import HOME
from agentworld.domains.swe.user_repo import RepoError, UserRepo, suite_budget, suite_limits
from agentworld.domains.terminal.limits import Limits


def user_repo_files(repo: UserRepo, mutation: Mutation | dict | None) -> dict[str, str]:
    """The repository's files with ``mutation`` applied (clean without).

    Raises:
        ValueError: the mutation changes no library module of the repository, or another line.
    """
    files = dict(repo.files)
    if mutation is None:
        return files
    m = mutation if isinstance(mutation, Mutation) else Mutation(**mutation)
    if not repo.library(m.file):
        raise ValueError(f"mutation of {m.file!r}, not a library module of {repo.name}")
    files[m.file] = apply(files[m.file], m)
    return files


class UserTaskSampler:
    """Seeded bug-fixing tasks in ``repo``, one mutation operator per kind.

    Args:
        repo: The user's repository.
        limits: Limits of each test run's sandbox, raised to
            :func:`~agentworld.domains.swe.user_repo.suite_limits`; a mutated repository's
            run gets :func:`~agentworld.domains.swe.user_repo.suite_budget` of the clean run's
            wall time (:attr:`budget_s`).
        sandbox: Sandbox kind (default: the detected one).
        tries: Candidate mutations run per task at most before the next kind is tried.

    Raises:
        RepoError: (at the first :meth:`sample`) the repository's test environment cannot be
            built, or the clean repository's tests do not run in the sandbox (no test id in
            their log) or none passes.
    """

    def __init__(self, repo: UserRepo, limits: Limits, sandbox: str | None = None,
                 tries: int = 12) -> None:
        self.repo, self.sandbox, self.tries = repo, sandbox, tries
        self.limits = suite_limits(limits)
        self.budget_s = self.limits.command_timeout_s  # set by the clean run (passing())
        self._mutated_limits = self.limits
        self.kinds = OPERATORS
        self._runs: dict[Mutation, tuple[dict[str, bool], dict[str, str]]] = {}
        self._clean: set[str] | None = None

    def _run(self, files: dict[str, str]) -> tuple[dict[str, bool], dict[str, str]]:
        log = run_suite(files, self._mutated_limits, self.sandbox,
                        self.repo.test_command(grading=True), self.repo.binds())
        return testlog.outcomes(log), testlog.errors(log)

    def passing(self) -> set[str]:
        """The tests that pass on the clean repository (run once; its wall time sets
        :attr:`budget_s`).

        Raises:
            RepoError: none passes, or the log names no test.
        """
        if self._clean is None:
            started = time.monotonic()
            log = run_suite(self.repo.files, self.limits, self.sandbox,
                            self.repo.test_command(grading=True), self.repo.binds())
            self.budget_s = suite_budget(time.monotonic() - started, self.limits)
            self._mutated_limits = suite_limits(self.limits, self.budget_s)
            outcomes = testlog.outcomes(log)
            self._clean = {t for t, ok in outcomes.items() if ok}
            if not self._clean:
                tail = " | ".join(log.strip().splitlines()[-3:])[:300]
                where = ("with its declared dependencies" if self.repo.env is not None else
                         "with the sandbox's bare python3: it declares no dependency")
                raise RepoError(
                    f"repo {str(self.repo.root)!r}: no test passes in the sandbox "
                    f"({len(outcomes)} ran, {where}): {tail}")
        return self._clean

    def sample(self, n: int, *, seed: int) -> list[Task]:
        """``n`` tasks drawn with ``random.Random(seed)``, kinds in turn from a seeded offset.

        Raises:
            RepoError: the clean tests do not run (:meth:`passing`).
            RuntimeError: no mutation of any kind makes a passing test fail.
        """
        rng = random.Random(seed)
        offset = rng.randrange(len(self.kinds))
        out = []
        for i in range(n):
            for k in range(len(self.kinds)):
                kind = self.kinds[(offset + i + k) % len(self.kinds)]
                task = self.task(kind, rng, f"swe-{self.repo.name}-{seed}-{i}")
                if task is not None:
                    out.append(task)
                    break
            else:
                raise RuntimeError(f"no mutation of {self.repo.name} makes a passing test fail")
        return out

    def task(self, kind: str, rng: random.Random, task_id: str) -> Task | None:
        """One task of ``kind``: the first of up to :attr:`tries` candidates, in ``rng``'s
        order, that makes a clean-passing test fail (``None``: none did)."""
        passing = self.passing()
        pool = [m for f in self.repo.modules for m in candidates(f, self.repo.files[f], kind)
                if self._parses(f, m)]
        rng.shuffle(pool)
        for mutation in pool[:self.tries]:
            if mutation not in self._runs:
                self._runs[mutation] = self._run(user_repo_files(self.repo, mutation))
            outcomes, errors = self._runs[mutation]
            failing = sorted(t for t in passing if not outcomes.get(t))
            if not failing:
                continue
            return Task(id=f"{task_id}-{kind}", domain="swe", kind=kind,
                        instruction=self.issue(failing, errors),
                        setup={"repo": self.repo.name, "digest": self.repo.digest,
                               "mutation": mutation.to_dict(), "suite_timeout_s": self.budget_s},
                        check={"fail_to_pass": failing,
                               "pass_to_pass": sorted(passing - set(failing))})
        return None

    def _parses(self, file: str, mutation: Mutation) -> bool:
        import ast

        try:
            ast.parse(apply(self.repo.files[file], mutation))
        except SyntaxError:
            return False
        return True

    def issue(self, failing: list[str], errors: dict[str, str]) -> str:
        """An issue-like description: the first failing test, its error, every failing test."""
        first = failing[0]
        listed = "\n".join(f"- {t}" for t in failing[:20])
        more = f"\n- ... and {len(failing) - 20} more" if len(failing) > 20 else ""
        return (f"Bug in {self.repo.name}: {first} fails.\n\n"
                f"Running the test suite in {HOME} fails:\n\n{first}\n{errors.get(first, '')}"
                f"\n\nFailing tests:\n{listed}{more}\n\nFix the library code in {HOME} so that "
                "these tests pass and every other test keeps passing. The tests are correct; "
                "do not change them. Tools: bash, str_replace_editor, run_tests, submit.")
