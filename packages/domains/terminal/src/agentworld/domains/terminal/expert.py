"""The scripted expert: solves each task kind the way a careful person would.

It looks around first (``ls``, ``pwd``, ``cat`` of a file, ...), then solves
the task with ordinary shell commands, sometimes changing directory first or
verifying in the same line (``mv a b && ls d``). The plan is drawn from the
policy's seeded random state at the first step of each episode.
"""

from __future__ import annotations

from collections.abc import Sequence
from posixpath import basename, dirname
from typing import Any

from agentworld.core.types import Action, Observation, Task
from agentworld.domains.terminal.policy_base import SeededPolicy, quote, rel, steps_taken
from agentworld.domains.terminal.prompt import HOME
from agentworld.domains.terminal.session_expert import SessionExpertMixin


class _Plan:
    """Commands with a simulated working directory, to write paths relative to it."""

    def __init__(self) -> None:
        self.cwd, self.cmds = HOME, []

    def p(self, path: str) -> str:
        return rel(path, self.cwd) if path else rel(".", self.cwd)

    def ls(self, path: str) -> str:
        shown = self.p(path)
        return "ls" if shown == "." else f"ls {shown}"

    def add(self, cmd: str) -> None:
        self.cmds.append(cmd)

    def cd(self, path: str) -> None:
        self.add(f"cd {self.p(path)}")
        self.cwd = f"{HOME}/{path}" if path else HOME


class ScriptedExpert(SessionExpertMixin, SeededPolicy):
    """Scripted expert policy (``name = "scripted"``).

    Args:
        seed: Seed of the policy's random choices; ``reset(seed)`` re-seeds.
        explore: Look around first (1-3 of ``ls``, ``pwd``, ``cat`` of set-up files), as a
            person new to the tree would; ``False``: go straight to the task's commands (the
            short demonstrations behaviour cloning of a small agent needs).
    """

    name = "scripted"

    def __init__(self, seed: int = 0, explore: bool = True) -> None:
        super().__init__(seed)
        self.explore = explore
        self._plan: list[str] = []

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The next planned command, or ``None`` when the plan is done."""
        i = steps_taken(history)
        if i == 0:
            self._plan = self._make_plan(task)
        return Action(text=self._plan[i]) if i < len(self._plan) else None

    def _make_plan(self, task: Task | None) -> list[str]:
        rng, plan = self.rng, _Plan()
        goal: dict[str, Any] = (task.check.get("goal") if task else None) or {}
        files = sorted((task.setup.get("files") or {}) if task else {})
        dirs = sorted((task.setup.get("dirs") or []) if task else [])
        looks = ["ls", "ls", "ls -l", "ls -a", "pwd", "ls -F"]
        looks += [f"ls {d}" for d in dirs[:3]] + [f"cat {f}" for f in files[:2]]
        for cmd in rng.sample(looks, rng.randint(1, 3)) if self.explore else ():
            plan.add(cmd)
        if not goal:
            return plan.cmds
        solve = SOLVERS.get(goal.get("op"))
        if solve is None:
            raise ValueError(f"task {task.id if task else None!r}: no scripted solution for goal "
                             f"op {goal.get('op')!r}; known: {', '.join(sorted(SOLVERS))}")
        solve(self, goal, plan)
        return plan.cmds

    def _maybe_cd(self, plan: _Plan, directory: str) -> None:
        if directory and self.rng.random() < 0.35:
            plan.cd(directory)

    def _mkdir(self, g: dict[str, Any], plan: _Plan) -> None:
        parent = dirname(g["path"])
        if parent and self.rng.random() < 0.5:
            plan.add(plan.ls(parent))
        self._maybe_cd(plan, parent)
        flag = "-p " if self.rng.random() < 0.4 else ""
        verify = " && " + plan.ls(parent) if self.rng.random() < 0.4 else ""
        plan.add(f"mkdir {flag}{plan.p(g['path'])}{verify}")

    def _write(self, g: dict[str, Any], plan: _Plan) -> None:
        self._maybe_cd(plan, dirname(g["path"]))
        verify = f" && cat {plan.p(g['path'])}" if self.rng.random() < 0.4 else ""
        plan.add(f"echo {quote(g['text'])} > {plan.p(g['path'])}{verify}")

    def _mkdir_write(self, g: dict[str, Any], plan: _Plan) -> None:
        if self.rng.random() < 0.5:
            plan.add(f"mkdir -p {plan.p(g['dir'])}")
            plan.cd(g["dir"])
        else:
            plan.add(f"mkdir {plan.p(g['dir'])}")
        plan.add(f"echo {quote(g['text'])} > {plan.p(g['path'])}")

    def _move_copy(self, g: dict[str, Any], plan: _Plan, cmd: str) -> None:
        src, dst = g["src"], g["dst"]
        plan.add(plan.ls(dirname(src)) if self.rng.random() < 0.6 else f"cat {plan.p(src)}")
        into = basename(src) == basename(dst) and dirname(src) != dirname(dst)
        target = plan.p(dirname(dst) or ".") + "/" if into else plan.p(dst)
        verify = " && " + plan.ls(dirname(dst)) if self.rng.random() < 0.3 else ""
        plan.add(f"{cmd} {plan.p(src)} {target}{verify}")

    def _move(self, g: dict[str, Any], plan: _Plan) -> None:
        self._move_copy(g, plan, "mv")

    def _copy(self, g: dict[str, Any], plan: _Plan) -> None:
        self._move_copy(g, plan, "cp")

    def _delete(self, g: dict[str, Any], plan: _Plan) -> None:
        plan.add(plan.ls(dirname(g["path"])))
        flag = self.rng.choice(["-r ", "-rf "]) if g["dir"] else ""
        plan.add(f"rm {flag}{plan.p(g['path'])}")

    def _cat(self, g: dict[str, Any], plan: _Plan) -> None:
        self._maybe_cd(plan, dirname(g["path"]))
        plan.add(f"cat {plan.p(g['path'])}")

    def _head(self, g: dict[str, Any], plan: _Plan) -> None:
        plan.add(f"head -n {g['n']} {plan.p(g['path'])}")

    def _tail(self, g: dict[str, Any], plan: _Plan) -> None:
        plan.add(f"tail -n {g['n']} {plan.p(g['path'])}")

    def _grep(self, g: dict[str, Any], plan: _Plan) -> None:
        plan.add(f"grep {self.rng.choice(['-r', '-rl', '-rn'])} {g['word']} .")

    def _find(self, g: dict[str, Any], plan: _Plan) -> None:
        plan.add(f"find . -name {quote(g['pattern'])}")

    def _wc(self, g: dict[str, Any], plan: _Plan) -> None:
        path = plan.p(g["path"])
        plan.add(f"wc -l {path}" if self.rng.random() < 0.7 else f"cat {path} | wc -l")

    def _ls_count(self, g: dict[str, Any], plan: _Plan) -> None:
        plan.add(f"ls {plan.p(g['path'])}")
        plan.add(f"ls {plan.p(g['path'])} | wc -l")

    def _append(self, g: dict[str, Any], plan: _Plan) -> None:
        plan.add(f"cat {plan.p(g['path'])}")
        plan.add(f"echo {quote(g['text'])} >> {plan.p(g['path'])}")

    def _replace(self, g: dict[str, Any], plan: _Plan) -> None:
        plan.add(
            f"grep {g['old']} {plan.p(g['path'])}"
            if self.rng.random() < 0.5
            else f"cat {plan.p(g['path'])}"
        )
        plan.add(f"sed -i 's/{g['old']}/{g['new']}/g' {plan.p(g['path'])}")

    def _cd(self, g: dict[str, Any], plan: _Plan) -> None:
        parts = g["path"].split("/")
        if len(parts) > 1 and self.rng.random() < 0.5:
            for i in range(len(parts)):
                plan.cd("/".join(parts[: i + 1]))
        else:
            plan.cd(g["path"])
        plan.add("pwd")


#: The expert's solution of each task goal's ``op`` (``check["goal"]["op"]``, written by the
#: task makers of :mod:`~agentworld.domains.terminal.tasks` and ``session_tasks``).
SOLVERS = {
    "mkdir": ScriptedExpert._mkdir, "write": ScriptedExpert._write,
    "mkdir_write": ScriptedExpert._mkdir_write, "move": ScriptedExpert._move,
    "copy": ScriptedExpert._copy, "delete": ScriptedExpert._delete, "cat": ScriptedExpert._cat,
    "head": ScriptedExpert._head, "tail": ScriptedExpert._tail, "grep": ScriptedExpert._grep,
    "find": ScriptedExpert._find, "wc": ScriptedExpert._wc, "ls_count": ScriptedExpert._ls_count,
    "append": ScriptedExpert._append, "replace": ScriptedExpert._replace,
    "cd": ScriptedExpert._cd, "arith": ScriptedExpert._arith, "loop": ScriptedExpert._loop,
    "distinct": ScriptedExpert._distinct, "column_sum": ScriptedExpert._column_sum,
    "row_count": ScriptedExpert._row_count, "write_lines": ScriptedExpert._write_lines,
    "script": ScriptedExpert._script, "condition": ScriptedExpert._condition,
    "status": ScriptedExpert._status, "compare": ScriptedExpert._compare,
    "heredoc": ScriptedExpert._heredoc,
}
