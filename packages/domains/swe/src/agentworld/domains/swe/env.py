"""``SweEnv``: the real swe environment (Gymnasium API, ``agentworld/swe-v0``).

Each episode is a fresh git repository of the task's buggy project (``textkit``, ``ledger``) in the episode root of
the terminal domain's sandbox (:class:`agentworld.domains.terminal.env.TerminalEnv`: bash as an
unprivileged user with ``/home/agent`` as home and repository root, no network, resource and
time limits, no process left after a command). Every tool runs there: ``bash`` as typed,
``str_replace_editor`` and the test runner as ``python3`` scripts
(:mod:`agentworld.domains.swe.tools`). ``reset`` shows the issue text; ``step`` returns the
tool's output. A malformed call is an ``Error: ...`` observation (reward 0, the episode goes
on), never an exception.

Reward: 1.0 and ``terminated`` when every ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` test of the task
passes on the workspace's library files put over a pristine checkout of the task's repository
(its own tests), run in a fresh sandbox of the host's with ``python3 -I -S``
(:mod:`agentworld.domains.swe.grading`: nothing of the agent's shell, home or commits but the
library files counts), checked after ``submit`` (which ends the episode either way, 0.0 when a
test fails) and after a ``run_tests`` whose log shows the task's tests passing.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from agentworld.core.env_base import EnvBase
from agentworld.core.gymvec import FreeText
from agentworld.core.toolcalls import call_of
from agentworld.core.types import Action, ObservationText, Task
from agentworld.domains.swe import testlog, tools
from agentworld.domains.swe.grading import Grader
from agentworld.domains.swe.project import HOME, PROJECT
from agentworld.domains.swe.tasks import SweTaskSampler, repo_files
from agentworld.domains.swe.user_repo import UserRepo, suite_limits, task_budget
from agentworld.domains.swe.user_tasks import UserTaskSampler, user_repo_files
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.limits import Limits

ACTION_MAX_LENGTH = 65536
OBSERVATION_MAX_LENGTH = 70000
_CHARSET = frozenset(chr(c) for c in range(32, 0x2FFF)) | {"\n", "\t"}
#: Fixed author and dates of the task commit, so its hash and ``git log`` are reproducible
#: (``{p}``: the project's name).
GIT_ENV = ("GIT_AUTHOR_NAME={p} GIT_AUTHOR_EMAIL=dev@{p}.invalid "
           "GIT_COMMITTER_NAME={p} GIT_COMMITTER_EMAIL=dev@{p}.invalid "
           "GIT_AUTHOR_DATE='2024-01-01T00:00:00Z' GIT_COMMITTER_DATE='2024-01-01T00:00:00Z'")
INIT = ("export PAGER=cat GIT_PAGER=cat MANPAGER=cat PYTHONDONTWRITEBYTECODE=1 && "
        f"git -c init.defaultBranch=main init -q && git add -A && {GIT_ENV} "
        "git commit -q -m '{p} 1.0.0'")


def default_limits() -> Limits:
    """The terminal's limits with a 30 s command timeout and 64 KiB of output per call."""
    return Limits(command_timeout_s=30.0, output_bytes=64 << 10)


class SweEnv(EnvBase):
    """A real repository workspace with SWE-agent's tools, sandboxed
    (:class:`~agentworld.core.env_base.EnvBase`: it draws the task, counts steps, truncates
    and closes).

    Args:
        tasks: Sampler drawing a task at each ``reset`` without one (default
            :class:`SweTaskSampler`).
        max_steps: Steps after which ``step`` reports ``truncated=True``.
        limits: Sandbox limits (default :func:`default_limits`).
        sandbox: Sandbox kind (default: the detected one).
        repo: The user's own git repository of a Python project
            (:mod:`agentworld.domains.swe.user_repo`): its tasks
            (:class:`~agentworld.domains.swe.user_tasks.UserTaskSampler`) instead of the
            built-in projects'.
        test_cmd: The repository's test command, run in the sandbox (default: unittest
            discovery, graded as ``python3 -I -S``).

    Spaces: ``action_space`` is ``spaces.Text`` of one JSON tool call (up to 65,536
    characters); ``observation_space`` ``spaces.Text`` up to 70,000 characters.

    Raises:
        RuntimeError: (from ``reset``) no sandbox works here.
        agentworld.domains.swe.user_repo.RepoError: an unusable ``repo``, or its test
            environment (:mod:`agentworld.domains.swe.user_env`) cannot be built.
    """

    metadata = {"render_modes": []}

    def __init__(self, tasks: SweTaskSampler | None = None, max_steps: int = 30,
                 limits: Limits | None = None, sandbox: str | None = None,
                 repo: Path | str | None = None, test_cmd: str | None = None) -> None:
        limits = self._limits = limits or default_limits()
        self.repo = None if repo is None else UserRepo.read(repo, test_cmd)
        self.max_steps = max_steps
        binds = () if self.repo is None else self.repo.binds()
        self.terminal = TerminalEnv(limits=limits, sandbox=sandbox, ro_binds=binds)
        if self.repo is None:
            self.tasks = tasks or SweTaskSampler()
            self.grader = Grader(limits, sandbox)
        else:
            modules = list(self.repo.modules)
            self.tasks = tasks or UserTaskSampler(self.repo, limits, sandbox)
            self.grader = Grader(suite_limits(limits), sandbox,
                                 self.repo.test_command(grading=True),
                                 library=lambda pristine: modules, ro_binds=binds)
        self.action_space = FreeText(ACTION_MAX_LENGTH, min_length=1, charset=_CHARSET)
        self.observation_space = FreeText(OBSERVATION_MAX_LENGTH, min_length=0, charset=_CHARSET)
        self._state: dict[str, Any] | None = None  # privileged state, None: to read again
        self._graded: tuple[int, dict[str, bool]] | None = None
        self._pristine: dict[str, str] = {}  # the task's repository as reset made it

    def start(self, task: Task | None) -> tuple[ObservationText, dict[str, Any]]:
        """The episode of ``task`` (``reset(options={"task": Task})``, or drawn): its buggy
        repository, committed, in a fresh sandbox. Returns the issue text and
        ``info = {"task_id", "sandbox"}``.

        Raises:
            ValueError: the task's mutation does not fit the project.
            RuntimeError: no sandbox works here, or the repository cannot be committed.
        """
        if task is None:  # the sampler always draws one
            raise ValueError("an swe episode needs a task")
        project, files = self._files(task)
        setup = Task(id=task.id, domain="terminal", instruction="", setup={"files": files})
        _, info = self.terminal.reset(options={"task": setup})
        exports = self.repo.shell_setup() if self.repo is not None else ""
        result = self.terminal.run(INIT.format(p=project) + (f" && {exports}" if exports else ""))
        if result.exit_code != 0:
            self.terminal.close()
            raise RuntimeError(f"git could not commit the task repository: {result.output.strip()}")
        self._state, self._graded = None, None
        self._pristine = files
        observation = ObservationText(task.instruction, {"tool": None, "error": False})
        return observation, {"task_id": task.id, "sandbox": info["sandbox"]}

    def _files(self, task: Task) -> tuple[str, dict[str, str]]:
        """``(name for git, the task's repository files)``."""
        if self.repo is None:
            if task.setup.get("repo"):
                raise ValueError(f"task {task.id!r} is a task of the user's repository "
                                 f"{task.setup['repo']!r}; this env was given no repo=")
            project = task.setup.get("project") or PROJECT
            return project, repo_files(task.setup.get("mutation"), project)
        if task.setup.get("digest") != self.repo.digest:
            raise ValueError(f"task {task.id!r} is not a task of the repository "
                             f"{str(self.repo.root)!r} as it is now (another repository, or "
                             "its files changed since)")
        name = re.sub(r"[^A-Za-z0-9_.-]", "-", self.repo.name) or "repo"
        files = user_repo_files(self.repo, task.setup.get("mutation"))
        self.grader.limits = suite_limits(self._limits, task_budget(task.setup, self._limits))
        return name, files

    def tests_command(self, tests: list[str]) -> str:
        """The ``run_tests`` tool's command (``tests``: only those, where the runner can)."""
        if self.repo is None:
            return tools.tests_command(tests)
        return f"(cd ~ && {self.repo.test_command(tests)}\n)"

    def transition(self, action: Action | str) -> tuple[ObservationText, float, bool, dict[str, Any]]:
        """Run one tool call (``step``; ``truncated`` after ``max_steps``):
        ``(observation, reward, terminated, info)`` with ``info["tool"]`` (``None`` when
        unparsed), ``info["error"]`` and, after a graded call, ``info["tests"]``
        (``{test id: passed}``)."""
        name: str | None = None
        arguments: dict[str, Any] = {}
        reward, terminated, graded = 0.0, False, None
        try:
            name, arguments = call_of(action)
            if name == "bash":
                text = self.terminal.run(tools.bash_command(arguments)).output
            elif name == "str_replace_editor":
                text = self.terminal.run(tools.editor_command(arguments)).output.rstrip("\n")
            elif name == "run_tests":
                text = self.terminal.run(self.tests_command(tools.tests_argument(arguments))).output
                shown = testlog.outcomes(text)
                if all(shown.get(t) for t in self._task_tests()):
                    graded = self._grade()
            elif name == "submit":
                tools.unknown_arguments(arguments, set(), "submit")
                graded = self._grade()
                text = self._submission(graded)
                terminated = True
            else:
                raise tools.ToolError(f"Error: unknown tool {name!r}; valid: {', '.join(tools.TOOLS)}")
        except tools.ToolError as error:
            text = str(error)
        if graded is not None:
            solved = all(graded.get(t) for t in self._task_tests())
            reward, terminated = (1.0 if solved else 0.0), terminated or solved
        error = text.startswith("Error:")
        viewed = name == "str_replace_editor" and arguments.get("command") == "view"
        if not (error or viewed):
            self._state = None  # the workspace may have changed
        info = {"tool": name, "error": error}
        if graded is not None:
            info["tests"] = graded
        return ObservationText(text, {"tool": name, "error": error}), reward, terminated, info

    def _task_tests(self) -> list[str]:
        check = self.task.check if self.task else {}
        return [*check.get("fail_to_pass", []), *check.get("pass_to_pass", [])]

    def _grade(self) -> dict[str, bool]:
        """``{test id: passed}`` of the graded run (cached for this step)."""
        if self._graded is None or self._graded[0] != self.steps:
            assert self.terminal.root is not None
            self._graded = (self.steps, self.grader.outcomes(self._pristine, self.terminal.root))
        return self._graded[1]

    def _diff(self) -> str:
        return self.terminal.run(f"git --no-pager -C {shlex.quote(HOME)} diff HEAD").output

    def _submission(self, graded: dict[str, bool]) -> str:
        wanted = self._task_tests()
        passed = sum(bool(graded.get(t)) for t in wanted)
        verdict = "resolved" if passed == len(wanted) else "not resolved"
        failing = [t for t in wanted if not graded.get(t)]
        lines = [f"Submitted. Diff of the workspace:\n{self._diff().rstrip()}", "",
                 f"Tests: {passed}/{len(wanted)} passed; the issue is {verdict}."]
        lines += [f"FAILED {t}" for t in failing]
        return "\n".join(lines)

    def privileged_state(self) -> dict[str, Any] | None:
        """``{"diff": git diff HEAD of the workspace, "tests": {test id: passed}}`` read from the
        sandbox (the graded run), for collection and scoring only; read again after every step
        but a ``view`` or a tool error, which change nothing. ``None`` before ``reset`` or after
        ``close``."""
        if self.task is None or self.terminal.root is None:
            return None
        if self._state is None:
            self._state = {"diff": self._diff(), "tests": self._grade()}
        return {"diff": self._state["diff"], "tests": dict(self._state["tests"])}

    def release(self) -> None:
        """Stop the sandbox and delete the episode root (``close``). Idempotent."""
        self.terminal.close()
        self.task = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
