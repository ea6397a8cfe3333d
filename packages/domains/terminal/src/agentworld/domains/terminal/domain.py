"""``TerminalDomain``: the terminal domain as the framework sees it."""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentworld.core.protocols import TaskingPolicy
from agentworld.core.types import Action, Episode, Observation, Step, Task
from agentworld.domains.terminal import consistency as _consistency
from agentworld.domains.terminal import determinism as _determinism
from agentworld.domains.terminal import explain as _explain
from agentworld.domains.terminal import scorer
from agentworld.domains.terminal.bounds import describe_bounds
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.fs import FILE_CONDITIONS, output_holds
from agentworld.domains.terminal.history import (
    EPISODE_COMMANDS,
    History,
    HistoryPolicy,
    episodes_of,
    read_history,
)
from agentworld.domains.terminal.limits import Limits
from agentworld.domains.terminal.options import TerminalEnvOptions
from agentworld.domains.terminal.policies import make_policies
from agentworld.domains.terminal.prompt import HOME, absolute_cwd, render_prompt, split_prompt
from agentworld.domains.terminal.sandbox import detect_sandbox
from agentworld.domains.terminal.state_text import HOME_STATE_CHARS, render_setup
from agentworld.domains.terminal.tasks import KINDS, TerminalTaskSampler
from agentworld.domains.terminal.user_home import HomeTaskingPolicy, HomeTaskSampler, read_home

_BUCKETS = {
    "ls": "ls",
    "cat": "cat",
    "pwd": "pwd",
    "cd": "cd",
    "mkdir": "mkdir/touch",
    "touch": "mkdir/touch",
    "rm": "rm/mv/cp",
    "rmdir": "rm/mv/cp",
    "mv": "rm/mv/cp",
    "cp": "rm/mv/cp",
    "echo": "echo",
    "printf": "echo",
    "wc": "wc",
    "grep": "grep",
    "egrep": "grep",
    "find": "find",
    "sed": "sed",
    "head": "head/tail",
    "tail": "head/tail",
    **dict.fromkeys(["for", "while", "until", "if", "case", "[", "[[", "test", "true", "false"],
                    "control"),
    **dict.fromkeys(["sort", "uniq", "cut", "tr", "awk", "seq", "paste", "diff", "nl", "rev",
                     "expr", "bc", "let"], "text"),
    **dict.fromkeys(["python3", "python"], "python"),
}
# leading variable assignments: NAME=value, NAME=$(...), NAME=$((...)), NAME="..." or NAME='...'
_ASSIGNS = re.compile(
    r"""^\s*(?:[A-Za-z_][A-Za-z0-9_]*=(?:\$\(\(.*?\)\)|\$\(.*?\)|"[^"]*"|'[^']*'|[^\s;&|]*)\s*)+"""
)

SYSTEM_PROMPT = f"""You simulate a Linux bash terminal in a sandbox: user `user`, home {HOME} (shown as `~`), no network.
Each user message is one command line. Reply with what the terminal shows next: the output (stdout and
stderr, no colours, command not echoed), then the prompt `user@sandbox:DIR$ `, prefixed by `[N] ` when
the exit status N is non-zero. Commands running over 5 s are interrupted (`^C`, status 130); output over
4096 bytes is truncated."""


@functools.cache
def _history(path: str) -> History:
    return read_history(Path(path))


@functools.cache
def _announce(path: str) -> None:
    """Say once per process how much of the history at ``path`` is replayed."""
    history = _history(path)
    print(f"terminal: {Path(path).name}: {history.summary()}; {len(episodes_of(history))} "
          f"episodes of up to {EPISODE_COMMANDS} commands", file=sys.stderr)


@functools.cache
def _home(path: str) -> dict[str, Any]:
    return read_home(Path(path))[0]


@functools.cache
def _bash_version() -> str:
    try:
        text = subprocess.run(
            ["bash", "--version"], capture_output=True, text=True, timeout=5
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    match = re.search(r"version (\S+)", text)
    return f"GNU bash {match.group(1)}" if match else "unknown"


class TerminalDomain:
    """The ``terminal`` domain (:class:`agentworld.core.protocols.Domain`).

    Args:
        commands: A user's shell history or list of command lines (``--set commands=FILE``):
            the domain then offers the ``history`` policy alone, replaying them
            (:mod:`agentworld.domains.terminal.history`).
        home: A user's folder (``--set home=DIR``) added to every task's home
            (:mod:`agentworld.domains.terminal.user_home`).
        home_state_chars: Characters of the world model's description of each task's home
            with ``home`` (``--set home_state_chars=N``,
            :mod:`agentworld.domains.terminal.state_text`).
    """

    name = "terminal"
    version = "0.1.0"
    env_options = TerminalEnvOptions
    defines_rewards = False  # the world model predicts no reward footer; verify() rewards

    def __init__(self, commands: str | Path | None = None, home: str | Path | None = None,
                 home_state_chars: int = HOME_STATE_CHARS) -> None:
        self.commands, self.home, self.home_state_chars = commands, home, home_state_chars

    def for_environment(self, options: dict[str, Any]) -> TerminalDomain | None:
        """The domain of ``options``' ``commands`` and ``home`` (``None`` without either);
        says on stderr how many history lines are replayed and how many were skipped.

        Raises:
            ValueError: the history holds no runnable line, or the home cannot be copied.
        """
        if options.get("commands") is None and options.get("home") is None:
            return None
        domain = TerminalDomain(options.get("commands"), options.get("home"),
                                options.get("home_state_chars", HOME_STATE_CHARS))
        if domain.commands is not None:
            _announce(str(domain.commands))
        return domain

    def system_prompt(self, task: Task | None) -> str:
        """The world-model system prompt: the terminal's rules plus the task's initial file tree.

        The simulator is reset to the same state as the real environment, so
        it is told what the home directory holds at the start (directories
        and every set-up file's content); the agent never sees this. The task
        instruction itself is added by the core renderer.
        """
        if task is None or not task.setup:
            return SYSTEM_PROMPT
        return f"{SYSTEM_PROMPT}\n\n{render_setup(task.setup)}"

    def make_env(self, **kwargs: Any) -> TerminalEnv:
        """A real :class:`TerminalEnv`; ``kwargs`` go to its constructor (but ``commands``,
        which the ``history`` policy replays; ``home`` defaults to this domain's).

        Raises:
            RuntimeError: no sandbox (bubblewrap or unshare) works on this machine.
            ValueError: ``home`` cannot be copied (:func:`~agentworld.domains.terminal.
                user_home.read_home`).
        """
        detect_sandbox()
        kwargs.pop("commands", None)  # the history policy's, not the environment's
        if self.home is not None:
            kwargs.setdefault("home", self.home)
            kwargs.setdefault("home_state_chars", self.home_state_chars)
        return TerminalEnv(**kwargs)

    def tasks(self) -> TerminalTaskSampler:
        """The seeded task sampler (with the user's home in each task when ``home`` is set)."""
        if not self.home:
            return TerminalTaskSampler()
        return HomeTaskSampler(_home(str(self.home)), self.home_state_chars)

    def policies(self) -> dict[str, Any]:
        """``{"scripted": ScriptedExpert, "random": RandomPolicy}``, plus ``"llm": LLMPolicy`` when
        ``$AGENTWORLD_LLM_BASE_URL`` is set (fresh, seed 0;
        :func:`~agentworld.domains.terminal.policies.make_policies`); with ``commands``,
        ``{"history": HistoryPolicy}`` alone. With ``home``, the policies that bring their
        own tasks add the home to them."""
        out: dict[str, Any] = make_policies()
        if self.commands is not None:
            out = {"history": HistoryPolicy(episodes_of(_history(str(self.commands))),
                                            Path(self.commands).name)}
        if self.home is not None:
            home = _home(str(self.home))
            out = {k: HomeTaskingPolicy(p, home, self.home_state_chars)
                   if isinstance(p, TaskingPolicy) else p
                   for k, p in out.items()}
        return out

    def score(self, predicted: str, reference: Observation) -> float:
        """Line/exit/cwd fidelity in [0, 1] (:func:`agentworld.domains.terminal.scorer.score`)."""
        return scorer.score(predicted, reference)

    def action_type(self, action: Action) -> str:
        """First command word bucketed: ``ls``, ``cat``, ``pwd``, ``cd``, ``mkdir/touch``,
        ``rm/mv/cp``, ``echo``, ``wc``, ``grep``, ``find``, ``sed``, ``head/tail``,
        ``control`` (``for``, ``while``, ``if``, ``case``, ``[``, ``test``, ``true``,
        ``false``), ``text`` (``sort``, ``uniq``, ``cut``, ``tr``, ``awk``, ``seq``,
        ``paste``, ``diff``, ``nl``, ``rev``, ``expr``, ``bc``, ``let``), ``python``,
        ``assign`` (only variable assignments) or ``other``."""
        text = action.text
        match = _ASSIGNS.match(text)
        if match:
            text = text[match.end():].strip()
            if not text or text[0] in ";&|":
                return "assign"
        words = text.split()
        first = words[0] if words else ""
        return _BUCKETS.get(first.split("/")[-1], "other")

    def command_families(self, action: Action) -> set[str]:
        """The commands an action runs (``for``, ``sort``, ``python3``, ...), for holding command
        families out of training (:func:`agentworld.domains.terminal.consistency.command_words`)."""
        return _consistency.command_words(action.text)

    def consistency_turns(self, episode: Episode) -> set[int]:
        """Steps whose real output depends on what earlier steps of the episode wrote
        (:func:`agentworld.domains.terminal.consistency.consistency_turns`)."""
        return _consistency.consistency_turns(episode)

    def is_deterministic(self, action: Action, reference: Observation | None = None) -> bool:
        """Whether the real output of ``action`` (``reference``) is a function of the episode so
        far: not for the clock, process ids or randomness (``date``, ``ps``, ``$RANDOM``,
        ``mktemp``, ``ls -l`` of files the episode wrote;
        :func:`agentworld.domains.terminal.determinism.is_deterministic`)."""
        return _determinism.is_deterministic(action.text,
                                             reference.text if reference is not None else None)

    def output_text(self, observation: Observation) -> str:
        """The command output of an observation: its text without the trailing prompt line."""
        return split_prompt(observation.text)[0]

    def empty_observation(self, previous: str) -> str:
        """What the terminal shows after a command that prints nothing and succeeds.

        The prompt line of ``previous`` (same working directory) without an
        exit-status marker; the "empty observation" baseline of fidelity reports.
        """
        _, prompt = split_prompt(previous)
        return render_prompt(absolute_cwd(prompt.cwd) if prompt else HOME, 0)

    def initial_observation(self, task: Task | None) -> str:
        """What the real terminal shows at reset, for any task: the prompt in the home
        directory (``user@sandbox:~$ ``); simulated episodes start from it too."""
        return render_prompt(HOME, 0)

    def verify(self, observation: str, task: Task | None = None) -> tuple[float, bool] | None:
        """The reward and termination of a (simulated) observation text: ``(1.0, True)`` when
        the task's check holds on what the text shows, else ``(0.0, False)``.

        The text shows the command's output and, in the prompt, the working directory, so the
        check's ``output_contains``, ``output_regex`` and ``cwd`` conditions are tested as the
        real environment tests them (:func:`agentworld.domains.terminal.fs.output_holds`).
        ``None`` (cannot tell) when there is no task or check, when the check has conditions
        on the file tree (``dirs``, ``exists``, ``absent``, ``files``: no single observation
        shows them), or when it has a ``cwd`` condition and the text no prompt line.
        """
        check = task.check if task is not None else None
        if not check or any(key in check for key in FILE_CONDITIONS):
            return None
        output, prompt = split_prompt(observation)
        if prompt is None and "cwd" in check:
            return None
        try:
            success = output_holds(check, output, absolute_cwd(prompt.cwd) if prompt else "")
        except (ValueError, TypeError):  # a pattern RE2 refuses (regexes.compile_pattern)
            return None
        return (1.0, True) if success else (0.0, False)

    def verify_transcript(
        self, task: Task | None, transcript: Sequence[tuple[str, str]]
    ) -> tuple[float, bool] | None:
        """The task check decided from a (simulated) episode's transcript
        (:class:`~agentworld.core.protocols.TranscriptRewardingDomain`): ``transcript`` is
        ``[(command, observation text), ...]`` oldest first. The real environment ends the
        episode at the first step whose check holds, so the last observation decides, as
        :meth:`verify` decides it; ``None`` for an empty transcript and wherever :meth:`verify`
        cannot tell (checks on the file tree: a transcript shows only what commands printed)."""
        return self.verify(transcript[-1][1], task) if transcript else None

    def explain(
        self, step: Step, previous_state: dict[str, Any] | None, history: _explain.History = ()
    ) -> str:
        """The state lookup of ``step``: ``ls DIR``, ``cat FILE``, ``cd DIR`` or ``cwd DIR``,
        then the earlier command lines of ``history`` that wrote what it reads
        (:func:`agentworld.domains.terminal.explain.explain`)."""
        return _explain.explain(step, previous_state, history)

    def explain_text(self, action: str, observation: str, history: _explain.History = ()) -> str:
        """The rationale of ``action`` from the previous observation's text and the episode's
        earlier steps, as a simulator writes it before predicting
        (:func:`agentworld.domains.terminal.explain.explain_text`)."""
        return _explain.explain_text(action, observation, history)

    def describe(self) -> dict[str, str]:
        """Facts for ``agentworld domains``: sandbox, shell, limits, which bounds hold
        (``bound: disk`` ... ``bound: network``,
        :func:`~agentworld.domains.terminal.bounds.describe_bounds`), prompt."""
        try:
            sandbox = detect_sandbox()
        except RuntimeError as exc:
            sandbox = f"unavailable ({exc})"
        lim = Limits()
        policies = make_policies()
        return {
            "sandbox": sandbox,
            "shell": _bash_version(),
            "limits": (
                f"{lim.command_timeout_s:g} s per command, {lim.cpu_s} s CPU, "
                f"{lim.memory_bytes >> 20} MiB memory per process, {lim.nproc} processes, "
                f"{lim.file_bytes >> 20} MiB per file, {lim.output_bytes} B output"
            ),
            **describe_bounds(lim),
            "prompt": "user@sandbox:~/dir$  ([N] prefix after a non-zero exit)",
            "tasks": ", ".join(KINDS),
            "policies": ", ".join(policies) + ("" if "llm" in policies
                                               else "; llm needs AGENTWORLD_LLM_BASE_URL"),
        }
