"""``UserSweDomain``: the swe domain on the user's own repository (``--set repo=PATH``), whose
tasks are mutations of its library modules that its own tests catch
(:mod:`agentworld.domains.swe.user_tasks`); never the built-in projects' tasks."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from agentworld.core.llm_policy import LLMPolicy, endpoint
from agentworld.core.types import Task
from agentworld.domains.swe import tools
from agentworld.domains.swe.domain import SYSTEM_PROMPT, SweDomain
from agentworld.domains.swe.env import SweEnv, default_limits
from agentworld.domains.swe.policies import SWE_AGENT_PROMPT, RandomPolicy, ScriptedExpert
from agentworld.domains.swe.user_repo import UserRepo
from agentworld.domains.swe.user_tasks import UserTaskSampler


class UserSweDomain(SweDomain):
    """:class:`~agentworld.domains.swe.domain.SweDomain` on the user's repository.

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
        """The swe world-model prompt naming the user's repository, plus the issue."""
        text = SYSTEM_PROMPT.replace("@PROJECT@", self.repo.name) + json.dumps(
            tools.TOOL_DEFINITIONS, ensure_ascii=False, indent=2)
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
                "tests": self.test_cmd or "unittest discovery (python3 -I -S when grading)"}
