"""Collection policies of the swe domain: ``scripted`` (an expert), ``random`` and, when an
endpoint is configured, the shared ``llm`` policy (:mod:`agentworld.core.llm_policy`).

* :class:`ScriptedExpert` localises as a developer would: runs the tests, greps for the
  function the mutation is in, views it, reverts the mutation with one ``str_replace``
  (:func:`~agentworld.domains.swe.mutations.fix_edit`), runs the tests again (the environment
  ends the episode with reward 1.0 once they pass) and otherwise submits.
* :class:`RandomPolicy` makes 4-12 plausible calls of every tool (shell commands, views,
  edits that mostly fail the uniqueness rule, test runs), some malformed, and submits half
  the time.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Sequence

from agentworld.core.domain_base import PolicyBase
from agentworld.core.llm_policy import TOOL_AGENT_PROMPT, LLMPolicy, endpoint
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.swe.mutations import Mutation, apply, fix_edit
from agentworld.domains.swe.project import (
    HOME,
    PROJECT,
    Project,
    get_project,
    project_files,
    suite_files,
)
from agentworld.domains.swe.tasks import repo_files
from agentworld.domains.swe.user_repo import UserRepo
from agentworld.domains.swe.tools import render_call


def enclosing_function(source: str, line: int) -> tuple[str, int, int] | None:
    """``(name, first line, last line)`` of the innermost function of ``source`` holding
    ``line`` (1-based), else ``None``."""
    best = None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.lineno <= line <= node.end_lineno:
            if best is None or node.lineno >= best[1]:
                best = (node.name, node.lineno, node.end_lineno)
    return best


class ScriptedExpert(PolicyBase):
    """The expert (``name = "scripted"``); solves every task of
    :class:`~agentworld.domains.swe.tasks.SweTaskSampler`.

    Args:
        seed: Seed of its choices (grep or view first); ``reset(seed)`` re-seeds.
        repo: The user's repository, whose tasks it solves instead
            (:class:`~agentworld.domains.swe.user_tasks.UserTaskSampler`).
    """

    name = "scripted"

    def __init__(self, seed: int = 0, repo: UserRepo | None = None) -> None:
        self.repo = repo
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Start an episode with ``random.Random(seed)``."""
        self.rng = random.Random(seed)
        self.plan: list[Action] | None = None

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The next tool call, or ``None`` once it has submitted (or has no task)."""
        if task is None:
            return None
        if self.plan is None:
            self.plan = self._plan(task)
        return self.plan.pop(0) if self.plan else None

    def _plan(self, task: Task) -> list[Action]:
        mutation = Mutation(**task.setup["mutation"])
        if self.repo is not None:
            project, clean = self.repo.name, self.repo.files[mutation.file]
            buggy = apply(clean, mutation)
            where = " ".join(sorted({m.split("/")[0] for m in self.repo.modules}))
        else:
            project = where = task.setup.get("project") or PROJECT
            buggy = repo_files(mutation, project)[mutation.file]
            clean = project_files(project)[mutation.file]
        path = f"{HOME}/{mutation.file}"
        found = enclosing_function(clean, mutation.line)
        name, first, last = found or ("", 1, -1)
        if mutation.mutated is None and last > 0:
            last -= 1  # the buggy file lacks the deleted line
        old, new = fix_edit(buggy, mutation)
        look = [render_call("bash", {"command": f"grep -n 'def {name}' -r {where}"})] if name else []
        if self.rng.random() < 0.5:
            look.append(render_call("str_replace_editor", {"command": "view", "path": HOME}))
        return [render_call("run_tests", {}), *look,
                render_call("str_replace_editor", {"command": "view", "path": path,
                                                   "view_range": [first, last]}),
                render_call("str_replace_editor", {"command": "str_replace", "path": path,
                                                   "old_str": old, "new_str": new}),
                render_call("run_tests", {}), render_call("submit", {})]


class RandomPolicy(PolicyBase):
    """Random plausible tool calls (``name = "random"``), 4-12 per episode.

    Args:
        seed: Seed of its choices; ``reset(seed)`` re-seeds.
        repo: The user's repository, whose files it names instead of the built-in projects'.
    """

    name = "random"
    COMMANDS = ("ls", "ls -la {p}", "git status", "git diff", "git log --oneline",
                "cat README.md", "grep -n return {module}", "wc -l {p}/*.py",
                "python3 -c 'import {p}; print({p}.__version__)'", "pwd", "cd {p}",
                "cd ~", "find . -name '*.py' -not -path './.git/*' | sort", "head -n 20 {suite}",
                "grep -rn 'def ' {p} | head", "python3 -m unittest {suite_id} 2>&1 | tail -3")
    """Shell commands; ``{p}``, ``{module}``, ``{suite}`` and ``{suite_id}`` name the task's
    project, its first module and its first test module (path and unittest id)."""
    WORDS = ("return", "values", "text", "year", "if", "def", "len(", "0", "1", "+ 1")

    def __init__(self, seed: int = 0, repo: UserRepo | None = None) -> None:
        self.repo = repo
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Start an episode with ``random.Random(seed)``."""
        self.rng = random.Random(seed)
        self.length = self.rng.randint(4, 12)

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """A random call; ``None`` after the episode's drawn length."""
        steps = sum(isinstance(item, Action) for item in history)
        if steps >= self.length:
            return None
        rng = self.rng
        if self.repo is not None:
            tests = sorted(p for p in self.repo.files if p.endswith(".py")
                           and p not in self.repo.modules)
            project = Project(self.repo.modules[0].split("/")[0].removesuffix(".py"), "",
                              self.repo.modules, self.repo.root)
            suite = tests[0] if tests else "README.md"
        else:
            project = get_project((task.setup.get("project") if task else None) or PROJECT)
            suite = suite_files(project.name)[0]
        path = f"{HOME}/{rng.choice([*project.modules, suite, 'README.md', 'nope.py'])}"
        if steps == self.length - 1 and rng.random() < 0.5:
            return render_call("submit", {})
        roll = rng.random()
        if roll < 0.3:
            command = rng.choice(self.COMMANDS).format(
                p=project.name, module=project.modules[0], suite=suite,
                suite_id=suite.removesuffix(".py").replace("/", "."))
            return render_call("bash", {"command": command})
        if roll < 0.5:
            start = rng.randint(1, 30)
            extra = {"view_range": [start, start + rng.randint(0, 15)]} if rng.random() < 0.5 else {}
            return render_call("str_replace_editor", {"command": "view", "path": path, **extra})
        if roll < 0.65:
            word = rng.choice(self.WORDS)
            return render_call("str_replace_editor", {"command": "str_replace", "path": path,
                                                      "old_str": word, "new_str": word + " "})
        if roll < 0.72:
            return render_call("str_replace_editor", {"command": "insert", "path": path,
                                                      "insert_line": rng.randint(0, 80),
                                                      "new_str": "# note"})
        if roll < 0.78:
            return render_call("str_replace_editor", {"command": "create",
                                                      "path": f"{HOME}/scratch_{steps}.py",
                                                      "file_text": "print('hello')\n"})
        if roll < 0.9:
            return render_call("run_tests", {})
        bad = rng.choice(['{"name": "bash", "arguments": {"cmd": "ls"}}',
                          '{"name": "edit", "arguments": {}}', "run the tests please",
                          '{"name": "str_replace_editor", "arguments": {"command": "delete", '
                          f'"path": "{path}"}}}}',
                          '{"name": "str_replace_editor", "arguments": {"command": "view", '
                          f'"path": "{project.modules[0]}"}}}}'])
        return Action(text=bad)


SWE_AGENT_PROMPT = (
    TOOL_AGENT_PROMPT
    + "\nThe repository is /home/agent. Tools: bash {command}, str_replace_editor {command: "
    "view|create|str_replace|insert, path (absolute), file_text?, old_str?, new_str?, "
    "insert_line?, view_range?}, run_tests {tests?}, submit {}. Fix the bug, run the tests, "
    "then submit."
)


def make_policies(seed: int = 0) -> dict[str, PolicyBase]:
    """Fresh policies by name: ``{"scripted": ScriptedExpert, "random": RandomPolicy}``, plus
    the shared ``llm`` (:class:`agentworld.core.llm_policy.LLMPolicy`) when an endpoint is
    configured (:func:`agentworld.core.llm_policy.endpoint`)."""
    out: dict[str, PolicyBase] = {"scripted": ScriptedExpert(seed), "random": RandomPolicy(seed)}
    if endpoint() is not None:
        out["llm"] = LLMPolicy(SWE_AGENT_PROMPT, seed=seed, max_tokens=1024, max_steps=30)
    return out
