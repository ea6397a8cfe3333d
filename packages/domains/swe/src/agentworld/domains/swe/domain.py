"""``SweDomain``: the swe domain as the framework sees it."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentworld.core.call_rationales import call_rationale, signatures
from agentworld.core.domain_base import DomainBase
from agentworld.core.llm_policy import LLMPolicy, endpoint
from agentworld.core.toolcalls import ToolCallError, call_of, parse_call
from agentworld.core.types import Action, Episode, Observation, Step, Task
from agentworld.domains.swe import scorer, tools
from agentworld.domains.swe.env import SweEnv, default_limits
from agentworld.domains.swe.options import SweEnvOptions
from agentworld.domains.swe.policies import (
    SWE_AGENT_PROMPT,
    RandomPolicy,
    ScriptedExpert,
    make_policies,
)
from agentworld.domains.swe.project import HOME, PROJECT, PROJECTS
from agentworld.domains.swe.tasks import KINDS, SweTaskSampler
from agentworld.domains.swe.user_repo import UserRepo
from agentworld.domains.swe.user_tasks import UserTaskSampler

SYSTEM_PROMPT = f"""You simulate a software engineering environment: a git repository of a small Python library (@PROJECT@) at {HOME} in a Linux sandbox, with python3 and git and no network. Given one tool call, reply with the exact output the tool returns.

Tools and their outputs:
- bash {{"command": str}}: the command's output (stdout and stderr), nothing else.
- str_replace_editor {{"command": "view", "path": str, "view_range"?: [start, end]}}: Here's the result of running `cat -n` on PATH: then the numbered lines; a directory: Here's the files and directories up to 2 levels deep in PATH, excluding hidden items: then the paths.
  "create" (file_text): File created successfully at: PATH. "str_replace" (old_str, new_str) and "insert" (insert_line, new_str): The file PATH has been edited. Here's the diff of the change: then the unified diff, then Review the changes and make sure they are as expected. Edit the file again if necessary.
  Errors: No replacement was performed, old_str `OLD` did not appear verbatim in PATH. / No replacement was performed. Multiple occurrences of old_str `OLD` in lines [N, ...]. Please ensure it is unique / The path PATH does not exist. Please provide a valid path. / Invalid `insert_line` parameter: ...
- run_tests {{"tests"?: [test ids]}}: unittest's verbose log, one line TEST_ID ... ok|FAIL|ERROR per test, the tracebacks of failures, Ran N tests, then OK or FAILED (failures=N).
- submit {{}}: Submitted. Diff of the workspace: the git diff, then Tests: P/N passed; the issue is resolved (or not resolved) and a FAILED line per failing test.
A malformed call gives one line starting with Error:.

Tool definitions:
"""

RUN_TESTS_UNITTEST = ("unittest's verbose log, one line TEST_ID ... ok|FAIL|ERROR per test, the "
                      "tracebacks of failures, Ran N tests, then OK or FAILED (failures=N).")
RUN_TESTS_PYTEST = ("pytest -v's log: the session header, one line TEST_ID PASSED|FAILED|ERROR "
                    "per test (TEST_ID as tests/test_a.py::test_b), the failures' short "
                    "tracebacks, a FAILED TEST_ID - REASON line per failure, then the counts.")
assert RUN_TESTS_UNITTEST in SYSTEM_PROMPT
TOOL_SIGNATURES = signatures(tools.TOOL_DEFINITIONS)
EDITS = ("create", "str_replace", "insert")


def explain_call(action: str, history: Sequence[tuple[str, str]] = ()) -> str:
    """The rationale of an swe call (:func:`agentworld.core.call_rationales.call_rationale`):
    a test run or a submission also reads every earlier edit and ``bash`` command, as they
    may have changed the files the tests import."""
    try:
        name, _ = parse_call(action)
    except ToolCallError:
        name = ""
    extra = []
    if name in ("run_tests", "submit"):
        for k, (earlier, _) in enumerate(history):
            try:
                tool, arguments = parse_call(earlier)
            except ToolCallError:
                continue
            if tool == "bash" or (tool == "str_replace_editor" and arguments.get("command") in EDITS):
                extra.append(k)
    return call_rationale(action, history, TOOL_SIGNATURES, extra)


class SweDomain(DomainBase):
    """The ``swe`` domain (:class:`agentworld.core.domain_base.DomainBase`)."""

    name = "swe"
    version = "0.1.0"
    env_options = SweEnvOptions

    def system_prompt(self, task: Task | None) -> str:
        """The world-model system prompt: the tools' outputs and their JSON definitions (as the
        public AgentWorldBench swe prompt lists the agent's tools), plus, for a task, the issue
        the agent works on."""
        project = (task.setup.get("project") if task else None) or PROJECT
        text = SYSTEM_PROMPT.replace("@PROJECT@", project) + json.dumps(
            tools.TOOL_DEFINITIONS, ensure_ascii=False, indent=2)
        return f"{text}\n\nIssue given to the agent:\n{task.instruction}" if task else text

    def for_environment(self, options: dict[str, Any]) -> SweDomain | None:
        """With ``repo`` (the user's own repository), a
        :class:`UserSweDomain` whose tasks and policies
        are the repository's, checked here (its clean tests run and pass in the sandbox);
        else ``None``.

        Raises:
            agentworld.domains.swe.user_repo.RepoError: an unusable repository, or no test
                of it passes in the sandbox.
        """
        if options.get("repo") is None:
            return None
        domain = UserSweDomain(options["repo"], options.get("test_cmd"), options.get("sandbox"))
        domain.tasks().passing()
        return domain

    def make_env(self, **kwargs: Any) -> SweEnv:
        """A real :class:`SweEnv` (``kwargs`` go to its constructor)."""
        return SweEnv(**kwargs)

    def tasks(self) -> SweTaskSampler:
        """The seeded task sampler (kinds :data:`~agentworld.domains.swe.tasks.KINDS`)."""
        return SweTaskSampler()

    def policies(self) -> dict[str, Any]:
        """Fresh ``{"scripted", "random"}`` policies (seed 0), plus ``llm`` with an endpoint."""
        return make_policies()

    def score(self, predicted: str, reference: Observation) -> float:
        """Structural fidelity in [0, 1] (:func:`agentworld.domains.swe.scorer.score`)."""
        return scorer.score(predicted, reference)

    def action_type(self, action: Action) -> str:
        """The tool name; for ``bash`` the command's first word (``grep``, ``git``);
        ``invalid`` for an action that is no tool call."""
        try:
            name, arguments = call_of(action)
        except tools.ToolError:
            return "invalid"
        command = arguments.get("command")
        if name == "bash" and isinstance(command, str) and command.split():
            return command.split()[0][:32]
        return name

    def command_families(self, action: Action) -> set[str]:
        """The tool, plus ``bash:WORD`` or ``str_replace_editor:COMMAND``."""
        try:
            name, arguments = call_of(action)
        except tools.ToolError:
            return {"invalid"}
        command = arguments.get("command")
        out = {name}
        if name == "bash" and isinstance(command, str) and command.split():
            out.add(f"bash:{command.split()[0][:32]}")
        if name == "str_replace_editor" and isinstance(command, str):
            out.add(f"str_replace_editor:{command}")
        return out

    def consistency_turns(self, episode: Episode) -> list[int]:
        """Steps whose real observation depends on the episode's own edits: a ``view`` of a
        file edited earlier (``create``, ``str_replace``, ``insert``), and a ``run_tests`` or
        ``submit`` after any edit."""
        out, edited = [], set()
        for i, step in enumerate(episode.steps):
            try:
                name, arguments = call_of(step.action)
            except tools.ToolError:
                continue
            path, command = arguments.get("path"), arguments.get("command")
            if name == "str_replace_editor" and command == "view" and path in edited:
                out.append(i)
            elif name in ("run_tests", "submit") and edited:
                out.append(i)
            if (name == "str_replace_editor" and command in ("create", "str_replace", "insert")
                    and isinstance(path, str) and not step.observation.text.startswith(
                        ("No replacement", "Invalid", "The path", "File already", "Parameter",
                         "Unrecognized", "Error"))):
                edited.add(path)
        return out

    def explain(
        self,
        step: Step,
        previous_state: dict[str, Any] | None,
        history: Sequence[tuple[str, str]] = (),
    ) -> str:
        """The call, its check against the tool definitions and the earlier turns it depends
        on: those that name or show its values (a path, a test id) and, for ``run_tests`` and
        ``submit``, the earlier edits and shell commands (:func:`explain_call`)."""
        return explain_call(step.action.text, history)

    def explain_text(
        self, action: str, observation: str, history: Sequence[tuple[str, str]] = ()
    ) -> str:
        """:meth:`explain` from text alone (it reads no state)."""
        return explain_call(action, history)

    def is_deterministic(self, action: Action, reference: Observation | None = None) -> bool:
        """Tool errors follow from the call alone."""
        return self.action_type(action) == "invalid"

    def verify(self, observation: str, task: Task | None) -> tuple[float, bool] | None:
        """``(1.0, True)`` after a resolved submission, ``(0.0, True)`` after another, else
        ``None``."""
        if not observation.startswith("Submitted."):
            return None
        return (1.0, True) if "; the issue is resolved." in observation else (0.0, True)

    def initial_observation(self, task: Task | None) -> str:
        """The reset observation: the task's issue text (``""`` without a task)."""
        return task.instruction if task else ""

    def describe(self) -> dict[str, str]:
        return {
            "environment": f"real: a git repository of {' or '.join(PROJECTS)} (small Python "
                           "libraries with unittest suites) in the terminal domain's sandbox",
            "bugs": "injected by mutation as SWE-smith does (Yang et al. 2025)",
            "tools": ", ".join(tools.TOOLS) + " (SWE-agent's str_replace_editor)",
            "task kinds": ", ".join(KINDS),
            "policies": "scripted, random, llm (with AGENTWORLD_LLM_BASE_URL)",
        }


class UserSweDomain(SweDomain):
    """:class:`SweDomain` on the user's repository; :meth:`SweDomain.for_environment` builds
    it, so it lives beside it.

    Args:
        repo: The repository's folder.
        test_cmd: Its test command (default: unittest discovery).
        sandbox: Sandbox kind (default: the detected one).

    Raises:
        agentworld.domains.swe.user_repo.RepoError: an unusable repository.
    """

    def __init__(self, repo: Path | str, test_cmd: str | None = None,
                 sandbox: str | None = None) -> None:
        self.repo = UserRepo.read(repo, test_cmd)
        self.test_cmd, self.sandbox = test_cmd, sandbox

    @functools.cached_property
    def _sampler(self) -> UserTaskSampler:
        return UserTaskSampler(self.repo, default_limits(), self.sandbox)

    def system_prompt(self, task: Task | None) -> str:
        """The swe world-model prompt naming the user's repository, plus the issue; with a
        test environment, its dependencies at /opt/venv and (pytest) pytest's log format."""
        text = SYSTEM_PROMPT.replace("@PROJECT@", self.repo.name)
        if self.repo.env is not None:
            text = text.replace("with python3 and git and no network", "with python3 and git "
                                "and no network; its dependencies are installed in a "
                                "read-only virtual environment at /opt/venv, first on PATH")
        if self.repo.env is not None and self.repo.env.pytest and self.test_cmd is None:
            text = text.replace(RUN_TESTS_UNITTEST, RUN_TESTS_PYTEST)
        text += json.dumps(tools.TOOL_DEFINITIONS, ensure_ascii=False, indent=2)
        return f"{text}\n\nIssue given to the agent:\n{task.instruction}" if task else text

    def make_env(self, **kwargs: Any) -> SweEnv:
        """A real :class:`SweEnv` on the repository (``kwargs`` go to its constructor)."""
        kwargs.setdefault("repo", str(self.repo.root))
        kwargs.setdefault("test_cmd", self.test_cmd)
        kwargs.setdefault("sandbox", self.sandbox)
        return SweEnv(**kwargs)

    def tasks(self) -> UserTaskSampler:
        """Mutations of the repository that its tests catch (one sampler per domain: each
        candidate's sandboxed run is cached)."""
        return self._sampler

    def policies(self) -> dict[str, Any]:
        """Fresh ``scripted`` and ``random`` policies on the repository (``llm`` with an
        endpoint)."""
        out: dict[str, Any] = {"scripted": ScriptedExpert(0, self.repo),
                               "random": RandomPolicy(0, self.repo)}
        if endpoint() is not None:
            out["llm"] = LLMPolicy(SWE_AGENT_PROMPT, seed=0, max_tokens=1024, max_steps=30)
        return out

    def describe(self) -> dict[str, str]:
        return {**super().describe(),
                "environment": f"real: the git repository {self.repo.root} in the terminal "
                               "domain's sandbox",
                "tests": self.test_cmd or (
                    "unittest discovery (python3 -I -S when grading)" if self.repo.env is None
                    else f"{'pytest -v' if self.repo.env.pytest else 'unittest discovery'} "
                         f"with /opt/venv/bin/python -I -B; /opt/venv: "
                         f"{', '.join(self.repo.env.requirements)} (wheels, read-only)")}
